"""simdb.django against a real PostgreSQL: the example project in tests/django_app (its models,
migrations and management command), each test on a fresh database of its own."""

from __future__ import annotations

import io
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

pytest.importorskip("django")
pytest.importorskip("pytest_django")

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_app.settings")

import django

django.setup()

from django.core import serializers  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402
from django_app.articles.models import (  # noqa: E402
    Article,
    Note,
    Page,
    near_duplicates,
    near_ids,
    near_sql,
    similar_notes,
)
from support import TESTS, code_blocks, doc  # noqa: E402
from support.oracles import hamming_near  # noqa: E402

import simdb  # noqa: E402
from simdb import query, schema  # noqa: E402
from simdb.django import (  # noqa: E402
    FingerprintField,
    Hamming,
    JaccardEstimate,
    JaccardIndex,
    SignatureField,
    SimhashIndex,
    compute_fingerprints,
)
from simdb.errors import InvalidParameter  # noqa: E402
from simdb.follow import app_column, keep  # noqa: E402
from simdb.index import lifecycle as index  # noqa: E402
from simdb.index.modes.jaccard import JaccardSpec  # noqa: E402
from simdb.index.modes.simhash import SimhashSpec  # noqa: E402
from simdb.sketch.minhash import document_signature, similarity  # noqa: E402

BTREES = ["article_fp_p0", "article_fp_p1", "article_fp_p2", "article_fp_p3"]
WORDS = [f"word{i}" for i in range(16)]


def _forget() -> None:
    """Close Django's default connection whatever its state (a failed migration leaves its atomic
    block open: Django's schema editor skips the atomic exit when deferred SQL fails, and a
    manage.py process would exit there, its transaction rolled back)."""
    connection = connections["default"]
    if connection.connection is not None:
        connection.connection.close()
    del connections["default"]


def _use(dsn: str, *, server_side_binding: bool = False) -> None:
    """Point Django's default connection at `dsn` (closing what it had open)."""
    params = conninfo_to_dict(dsn)
    _forget()
    connections["default"].settings_dict.update(
        NAME=params["dbname"],
        USER=params.get("user", ""),
        PASSWORD=params.get("password", ""),
        HOST=params.get("host", ""),
        PORT=params.get("port", ""),
        OPTIONS={"server_side_binding": True} if server_side_binding else {},
    )


@pytest.fixture
def articles_db(empty_db: str, django_db_blocker: object) -> Iterator[str]:
    """A fresh database (no simdb schema: the Django integration needs none) as Django's default."""
    _use(empty_db)
    unblock = getattr(django_db_blocker, "unblock", None)
    if unblock is None:
        yield empty_db
    else:
        with unblock():
            yield empty_db
    _forget()


@pytest.fixture
def migrated(articles_db: str) -> str:
    call_command("migrate", "articles", verbosity=0)
    return articles_db


def _text(rng: random.Random, n: int = 40) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _btrees(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'article_fp%%'"
        ).fetchall()
    return dict(rows)


def _table_btrees(dsn: str) -> list[str]:
    """The names of the indexes on the article table."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'articles_article' ORDER BY 1"
        ).fetchall()
    return [name for (name,) in rows]


def _table_exists(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT to_regclass('articles_article') IS NOT NULL").fetchone() == (True,)


def _note_btrees(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'note_sig%%'"
        ).fetchall()
    return dict(rows)


NOTE_LAYOUT = JaccardSpec(threshold=0.8, permutations=128).for_column().build("note_sig", simdb.Features(), 1)
NOTE_BTREES = sorted(f"note_sig_{column}" for column in NOTE_LAYOUT.columns)


def test_migrate_up_and_down(articles_db: str) -> None:
    call_command("migrate", "articles", verbosity=0)
    made = _btrees(articles_db)
    assert sorted(made) == BTREES
    assert "((fingerprint >> 48) & (65535)::bigint)" in made["article_fp_p0"]
    assert sorted(_note_btrees(articles_db)) == NOTE_BTREES
    call_command("migrate", "articles", "0002", verbosity=0)  # the Note migration down
    assert _note_btrees(articles_db) == {} and sorted(_btrees(articles_db)) == BTREES
    call_command("migrate", "articles", "zero", verbosity=0)
    assert _btrees(articles_db) == {}
    assert not _table_exists(articles_db)
    call_command("migrate", "articles", verbosity=0)
    assert sorted(_btrees(articles_db)) == BTREES
    assert sorted(_note_btrees(articles_db)) == NOTE_BTREES


def test_migration_is_atomic(articles_db: str) -> None:
    """The last B-tree fails (its name is taken): the table and the other B-trees are rolled back."""
    with psycopg.connect(articles_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE taken (x int)")
        conn.execute("CREATE INDEX article_fp_p3 ON taken (x)")
    with pytest.raises(django.db.utils.ProgrammingError, match="article_fp_p3"):
        call_command("migrate", "articles", verbosity=0)
    _forget()
    assert not _table_exists(articles_db)
    assert sorted(_btrees(articles_db)) == ["article_fp_p3"]
    with psycopg.connect(articles_db) as conn:
        assert conn.execute("SELECT count(*) FROM django_migrations WHERE app = 'articles'").fetchone() == (
            0,
        )


def test_makemigrations_sees_no_change(migrated: str) -> None:
    """The committed migration is what the models say (deconstruct round trip)."""
    call_command("makemigrations", "articles", "--check", "--dry-run", verbosity=0)
    index = Article._meta.indexes[0]
    path, args, kwargs = index.deconstruct()
    assert (path, args) == ("simdb.django.SimhashIndex", ())
    assert kwargs == {"fields": ["fingerprint"], "name": "article_fp", "max_distance": 3}
    assert SimhashIndex(**kwargs) == index == index.clone()
    other = SimhashIndex(fields=["fingerprint"], name="article_fp", max_distance=3, blocks=5)
    assert other != index and other.deconstruct()[2]["blocks"] == 5
    _, path, args, kwargs = Article._meta.get_field("fingerprint").deconstruct()
    assert (path, args, kwargs) == (
        "simdb.django.FingerprintField",
        [],
        {"source": "body", "fingerprint_spec": 2},
    )
    assert FingerprintField(**kwargs).deconstruct()[3] == kwargs


def test_a_field_of_spec_3_computes_one_bit_minhash() -> None:
    text = "one-bit MinHash keeps the lowest bit of each of the first MinHash values of a document"
    for bits in (64, 128):
        field = FingerprintField(source="body", bits=bits, fingerprint_spec=3)
        assert (
            field.compute(text)
            == simdb.fingerprint(text, spec=3, bits=bits)
            != simdb.fingerprint(text, bits=bits)
        )
        assert field.deconstruct()[3]["fingerprint_spec"] == 3


def test_a_source_that_is_no_field_fails_the_checks() -> None:
    from django.db import models
    from django.test.utils import isolate_apps

    with isolate_apps("django_app.articles"):

        class Broken(models.Model):
            fingerprint = FingerprintField(source="text")

            class Meta:
                app_label = "articles"

    (error,) = Broken._meta.get_field("fingerprint").check()
    assert error.id == "simdb.E001" and "'text'" in error.msg
    assert Article._meta.get_field("fingerprint").check() == []


def test_bad_settings_are_refused() -> None:
    with pytest.raises(InvalidParameter, match="width 96"):
        FingerprintField(bits=96)
    with pytest.raises(InvalidParameter, match=r"unknown fingerprint spec 4 \(use one of 1, 2, 3\)"):
        FingerprintField(fingerprint_spec=4)
    with pytest.raises(InvalidParameter, match="one field"):
        SimhashIndex(fields=["a", "b"], name="two")
    with pytest.raises(simdb.SimdbError):
        SimhashIndex(fields=["fingerprint"], name="bad", max_distance=3, blocks=2)


def _high_text(rng: random.Random) -> str:
    """A text whose fingerprint has its top bit set (a negative bigint in PostgreSQL)."""
    while True:
        text = _text(rng)
        if simdb.fingerprint(text) >= 2**63:
            return text


def test_fingerprints_on_save_and_bulk_create(migrated: str) -> None:
    rng = random.Random(7)
    high = _high_text(rng)
    saved = Article.objects.create(title="high", body=high)
    assert saved.fingerprint == simdb.fingerprint(high)
    saved.refresh_from_db()
    assert saved.fingerprint == simdb.fingerprint(high)  # unsigned again after the signed bigint
    assert list(Article.objects.filter(fingerprint=simdb.fingerprint(high))) == [saved]

    texts = [_text(rng) for _ in range(20)]
    Article.objects.bulk_create([Article(title=str(i), body=text) for i, text in enumerate(texts)])
    stored = dict(Article.objects.exclude(pk=saved.pk).values_list("body", "fingerprint"))
    assert stored == {text: simdb.fingerprint(text) for text in texts}

    for kind in ("json", "xml"):  # dumpdata / loaddata
        (back,) = serializers.deserialize(kind, serializers.serialize(kind, [saved]))
        assert back.object.fingerprint == simdb.fingerprint(high)

    empty = Article.objects.create(title="empty", body="")
    assert empty.fingerprint is None
    assert Article.objects.get(pk=empty.pk).fingerprint is None

    # QuerySet.update() bypasses pre_save: the fingerprint stays the old text's until a save()
    other = _text(rng)
    Article.objects.filter(pk=saved.pk).update(body=other)
    assert Article.objects.get(pk=saved.pk).fingerprint == simdb.fingerprint(high)
    reread = Article.objects.get(pk=saved.pk)
    reread.save()
    assert Article.objects.get(pk=saved.pk).fingerprint == simdb.fingerprint(other)

    # bulk_update() bypasses it too, unless compute_fingerprints sets them first
    changed = list(Article.objects.exclude(pk__in=[saved.pk, empty.pk]).order_by("pk")[:5])
    for article in changed:
        article.body = _text(rng)
    Article.objects.bulk_update(changed, ["body"])
    assert [Article.objects.get(pk=a.pk).fingerprint for a in changed] == [stored[t] for t in texts[:5]]
    Article.objects.bulk_update(changed, ["body", *compute_fingerprints(changed)])
    assert [Article.objects.get(pk=a.pk).fingerprint for a in changed] == [
        simdb.fingerprint(a.body) for a in changed
    ]


def _flip(value: int, count: int, rng: np.random.Generator, bits: int = 64) -> int:
    for bit in rng.choice(bits, size=count, replace=False):
        value ^= 1 << int(bit)
    return value


def _fill(dsn: str, rows: int, probes: list[int], rng: np.random.Generator) -> np.ndarray:
    """`rows` random fingerprints, and for each probe copies at distances 0..5; returns them all
    (unsigned, in id order)."""
    values = [int(v) for v in rng.integers(0, 2**64, size=rows, dtype=np.uint64)]
    for probe in probes:
        values += [_flip(probe, d, rng) for d in range(6)]
    with psycopg.connect(dsn) as conn:
        with conn.cursor().copy("COPY articles_article (title, body, fingerprint) FROM STDIN") as copy:
            for value in values:
                copy.write_row(("t", "", simdb.to_signed(value)))
        conn.execute("ANALYZE articles_article")
    return np.array(values, dtype=np.uint64)


def _near_ids(values: np.ndarray, ids: np.ndarray, probe: int, k: int) -> set[int]:
    return {key for key, _ in hamming_near(dict(zip(ids.tolist(), values.tolist(), strict=True)), probe, k)}


@pytest.mark.parametrize("server_side_binding", [False, True])
def test_near_equals_brute_force_and_uses_the_btrees(migrated: str, server_side_binding: bool) -> None:
    rng = np.random.default_rng(29)
    probes = [int(v) for v in rng.integers(0, 2**64, size=8, dtype=np.uint64)]
    probes[0] |= 1 << 63  # a negative bigint
    probes[1] &= (1 << 63) - 1
    values = _fill(migrated, 30_000, probes, rng)
    _use(migrated, server_side_binding=server_side_binding)
    ids = np.array(Article.objects.order_by("pk").values_list("pk", flat=True))
    for probe in probes:
        for k in (0, 1, 2, 3):
            found = set(Article.objects.filter(fingerprint__near=(probe, k)).values_list("pk", flat=True))
            assert found == _near_ids(values, ids, probe, k), (probe, k)
            assert len(found) >= k + 1
        # above the index's max_distance: a scan on purpose, as the refusal's hint says
        scanned = Article.objects.alias(d=Hamming("fingerprint", probe)).filter(d__lte=5)
        assert set(scanned.values_list("pk", flat=True)) == _near_ids(values, ids, probe, 5)
    assert set(near_ids(probes[0])) == _near_ids(values, ids, probes[0], 3)
    with psycopg.connect(migrated) as plain:  # the same statement from plain psycopg
        rows = plain.execute(*near_sql(probes[0])).fetchall()
    assert {pk for (pk,) in rows} == _near_ids(values, ids, probes[0], 3)
    with connections["default"].cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")  # (a prepared statement's plan)
    plan = Article.objects.filter(fingerprint__near=(probes[0], 3)).explain()
    for name in BTREES:
        assert f"Bitmap Index Scan on {name}" in plan
    assert "Seq Scan" not in plan


def test_hamming_annotates_and_orders(migrated: str) -> None:
    rng = random.Random(3)
    texts = [_high_text(rng) for _ in range(3)] + [_text(rng) for _ in range(5)]
    Article.objects.bulk_create([Article(title=str(i), body=text) for i, text in enumerate(texts)])
    probe = simdb.fingerprint(texts[0])
    rows = list(
        Article.objects.annotate(d=Hamming("fingerprint", probe)).order_by("d", "pk").values_list("body", "d")
    )
    expected = sorted(((t, simdb.hamming(simdb.fingerprint(t), probe)) for t in texts), key=lambda r: r[1])
    assert [d for _, d in rows] == [d for _, d in expected]
    assert dict(rows) == dict(expected)


def test_near_duplicates_of_an_article(migrated: str) -> None:
    rng = random.Random(11)
    body = _text(rng, 200)
    words = body.split()
    edited = " ".join([*words[:100], "omega", *words[101:]])  # one word changed
    original = Article.objects.create(title="original", body=body)
    copy = Article.objects.create(title="copy", body=edited)
    Article.objects.create(title="other", body=_text(random.Random(12), 200))
    distance = simdb.hamming(original.fingerprint, copy.fingerprint)
    assert distance <= 3, "the edit is small enough to stay within 3 bits"
    found = [(a.pk, a.distance) for a in near_duplicates(original)]
    brute = [
        (a.pk, simdb.hamming(a.fingerprint, original.fingerprint))
        for a in Article.objects.exclude(pk=original.pk)
        if simdb.hamming(a.fingerprint, original.fingerprint) <= 3
    ]
    assert found == sorted(brute, key=lambda r: (r[1], r[0]))
    assert (copy.pk, distance) in found
    out = io.StringIO()
    call_command("near_duplicates", str(original.pk), stdout=out)
    assert f"{copy.pk}\t{distance}\tcopy" in out.getvalue().splitlines()


def test_near_refuses_bad_arguments(migrated: str) -> None:
    with pytest.raises(InvalidParameter, match="pair"):
        list(Article.objects.filter(fingerprint__near=123))
    with pytest.raises(InvalidParameter, match=r"0\.\.64"):
        list(Article.objects.filter(fingerprint__near=(123, 65)))


@pytest.mark.parametrize("model", [Article, Page])
def test_near_above_the_index_max_distance_is_refused(migrated: str, model: type[Article | Page]) -> None:
    """A k the SimhashIndex does not answer would read every row: refused, with the ways out."""
    with pytest.raises(InvalidParameter) as refused:
        list(model.objects.filter(fingerprint__near=(123, 4)))
    name = model._meta.indexes[0].name
    assert refused.value.message == (
        f"fingerprint__near with max distance 4: SimhashIndex {name!r} answers up to 3 bits"
        " (above it the lookup would read every row)"
    )
    assert refused.value.hint == (
        "give a distance from 0 to 3, create the index with max_distance=4, or scan on purpose:"
        " .alias(d=Hamming('fingerprint', fp)).filter(d__lte=4)"
    )
    assert list(model.objects.filter(fingerprint__near=(123, 3))) == []


def test_readme_example_is_the_example_app() -> None:
    """docs/django.md's snippet is the model and function the example project runs."""
    (block,) = [b for b in code_blocks(doc("django"), "python") if "simdb.django" in b]
    models = (TESTS / "django_app" / "articles" / "models.py").read_text()
    flat = re.sub(r"\s+", "", models)
    for line in block.splitlines():  # every line but the signature (models.py has type hints)
        code = re.sub(r"\s+|#.*", "", line)
        if code and not code.startswith("def"):
            assert code in flat, line


def test_core_never_imports_django() -> None:
    code = (
        "import sys, simdb, simdb.index, simdb.query, simdb.cli, simdb.sqlalchemy;"
        "assert 'django' not in sys.modules, 'django imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_in_table_trigger_is_the_safety_net_for_update(migrated: str) -> None:
    """simdb's in-table index with a text column on the model's table: QuerySet.update() of the
    text clears the stale fingerprint and sync refills it. SimhashIndex's B-trees are its B-trees
    (simdb builds no second set of the same expressions); its queries find through them."""
    rng = random.Random(5)
    first, second = _text(rng), _text(rng)
    article = Article.objects.create(title="a", body=first)
    with psycopg.connect(migrated, autocommit=True) as conn:
        schema.ensure_schema(conn)
        spec = SimhashSpec(max_distance=3, blocks=Article._meta.indexes[0].layout(64).plan.blocks)
        app_column.attach_in_table(
            conn, "arts", "public.articles_article", "id", "fingerprint", "body", spec=spec
        )
        assert _table_btrees(migrated) == [
            *BTREES,
            "articles_article_pkey",
            "simdb_arts_key",
            "simdb_arts_unfilled",
        ]
        found = query.near(conn, index.get(conn, "arts"), simdb.fingerprint(first))
        assert [(match.key, match.distance) for match in found] == [(str(article.pk), 0)]

        Article.objects.filter(pk=article.pk).update(body=second)
        assert Article.objects.get(pk=article.pk).fingerprint is None
        assert keep.sync(conn, "arts").as_dict() == {"filled": 1, "empty": 0}  # (no sketch left to check)
    assert Article.objects.get(pk=article.pk).fingerprint == simdb.fingerprint(second)
    assert near_ids(simdb.fingerprint(second)) == [article.pk]


@pytest.mark.parametrize("server_side_binding", [False, True])
def test_128_bit_fingerprints(migrated: str, server_side_binding: bool) -> None:
    """bit(128) columns: the field's conversions, the near lookup against brute force, its plan."""
    text = _text(random.Random(1))
    assert FingerprintField(source="body", bits=128).compute(text) == simdb.fingerprint(text, bits=128)
    _use(migrated, server_side_binding=server_side_binding)
    rng = np.random.default_rng(128)
    words = rng.integers(0, 2**64, size=(3000, 2), dtype=np.uint64).tolist()
    values = [int(high) << 64 | int(low) for high, low in words]
    probes = values[:6]
    values += [_flip(probe, d, rng, 128) for probe in probes for d in range(6)]
    Page.objects.bulk_create([Page(url=str(i), fingerprint=v) for i, v in enumerate(values)])
    with connections["default"].cursor() as cursor:
        cursor.execute("ANALYZE articles_page")
    stored = dict(Page.objects.values_list("pk", "fingerprint"))
    assert sorted(stored.values()) == sorted(values)
    for probe in probes:
        for k in (0, 1, 3):
            found = set(Page.objects.filter(fingerprint__near=(probe, k)).values_list("pk", flat=True))
            assert found == {pk for pk, v in stored.items() if (v ^ probe).bit_count() <= k}, (probe, k)
    nearest = Page.objects.annotate(d=Hamming("fingerprint", probes[0])).order_by("d", "pk")[:6]
    assert [page.d for page in nearest] == [0, 0, 1, 2, 3, 4]
    with connections["default"].cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")
    plan = Page.objects.filter(fingerprint__near=(probes[0], 3)).explain()
    for number in range(4):
        assert f"Bitmap Index Scan on page_fp_p{number}" in plan


def test_jaccard_btrees_are_simdbs_band_keys(migrated: str) -> None:
    """Each band's B-tree is on simdb's own band-key expression of the column, as the in-table
    index of the same settings builds it."""
    with psycopg.connect(migrated) as conn:
        for number, key in enumerate(NOTE_LAYOUT.btree_keys(psycopg.sql.Identifier("signature"))):
            made = conn.execute(
                "SELECT pg_get_indexdef(%s::regclass, 1, true)", [f"note_sig_b{number}"]
            ).fetchone()
            conn.execute("CREATE TEMP TABLE t (signature bigint[])")
            conn.execute(psycopg.sql.SQL("CREATE INDEX t_i ON t (({}))").format(key))
            expected = conn.execute("SELECT pg_get_indexdef('t_i'::regclass, 1, true)").fetchone()
            conn.execute("DROP TABLE t")
            assert made == expected, number


def test_jaccard_deconstruct_round_trip(migrated: str) -> None:
    call_command("makemigrations", "articles", "--check", "--dry-run", verbosity=0)
    index = Note._meta.indexes[0]
    path, args, kwargs = index.deconstruct()
    assert (path, args) == ("simdb.django.JaccardIndex", ())
    assert kwargs == {"fields": ["signature"], "name": "note_sig", "threshold": 0.8, "signature_spec": 2}
    assert JaccardIndex(**kwargs) == index == index.clone()
    other = JaccardIndex(fields=["signature"], name="note_sig", threshold=0.9)
    assert other != index and other.btree_names() != index.btree_names()
    _, path, args, kwargs = Note._meta.get_field("signature").deconstruct()
    assert (path, args, kwargs) == (
        "simdb.django.SignatureField",
        [],
        {"source": "body", "signature_spec": 2},
    )
    assert SignatureField(**kwargs).deconstruct()[3] == kwargs
    assert SignatureField(permutations=64).deconstruct()[3] == {"permutations": 64, "signature_spec": 2}
    with pytest.raises(InvalidParameter, match="keys a sketch to one index's bands"):
        SignatureField(signature_spec=3)  # v3's keys belong to one threshold, a column to none
    with pytest.raises(InvalidParameter, match="one field"):
        JaccardIndex(fields=["a", "b"], name="two")
    with pytest.raises(InvalidParameter, match="pair"):
        list(Note.objects.filter(signature__similar=[1, 2, 3]))
    with pytest.raises(InvalidParameter, match="Jaccard similarity"):
        list(Note.objects.filter(signature__similar=([0] * 192, 1.5)))


def _variant(rng: random.Random, words: list[str], changes: int) -> str:
    edited = list(words)
    for _ in range(changes):
        edited[rng.randrange(len(edited))] = f"x{rng.randrange(10**6)}"
    return " ".join(edited)


def test_signatures_on_save_and_bulk_create(migrated: str) -> None:
    rng = random.Random(8)
    text = _text(rng, 60)
    note = Note.objects.create(body=text)
    expected = [int(v) for v in document_signature(text)]
    assert note.signature == expected and len(expected) == 128 + 64
    assert any(v >= 2**63 for v in expected)  # some are negative bigints in PostgreSQL
    note.refresh_from_db()
    assert note.signature == expected
    Note.objects.bulk_create([Note(body=t) for t in (_text(rng), _text(rng))])
    for stored in Note.objects.all():
        assert stored.signature == [int(v) for v in document_signature(stored.body)]
    (back,) = serializers.deserialize("json", serializers.serialize("json", [note]))
    assert back.object.signature == expected
    assert Note.objects.create(body="").signature is None
    # bulk_update() bypasses pre_save; compute_fingerprints sets signatures too
    changed = list(Note.objects.exclude(body="").order_by("pk"))
    for stored in changed:
        stored.body = _text(rng)
    assert compute_fingerprints(changed) == ["signature"]
    Note.objects.bulk_update(changed, ["body", "signature"])
    for stored in Note.objects.exclude(body=""):
        assert stored.signature == [int(v) for v in document_signature(stored.body)]


@pytest.mark.parametrize("server_side_binding", [False, True])
def test_similar_equals_brute_force_and_uses_the_btrees(migrated: str, server_side_binding: bool) -> None:
    """signature__similar finds what simdb's jaccard index finds: the rows sharing a band key with
    the signature whose estimate (simdb's own) reaches the similarity; below the threshold, every
    row whose estimate reaches it."""
    rng = random.Random(29)
    vocabulary = [f"w{i}" for i in range(400)]
    bases = [[rng.choice(vocabulary) for _ in range(200)] for _ in range(40)]
    texts = [_variant(rng, base, rng.randrange(0, 12)) for base in bases for _ in range(60)]
    _use(migrated, server_side_binding=server_side_binding)
    Note.objects.bulk_create([Note(body=t) for t in texts], batch_size=500)
    with connections["default"].cursor() as cursor:
        cursor.execute("ANALYZE articles_note")
    stored = {pk: np.array(sig, dtype=np.uint64) for pk, sig in Note.objects.values_list("pk", "signature")}
    banding = NOTE_LAYOUT.banding
    bands = {pk: banding.keys(sig) for pk, sig in stored.items()}
    probes = [document_signature(_variant(rng, base, 1)) for base in bases[:6]]
    for probe in probes:
        probe_bands = banding.keys(probe)
        for wanted in (0.8, 0.9, 0.6):  # 0.6: below the index's threshold, a scan
            found = set(Note.objects.filter(signature__similar=(probe, wanted)).values_list("pk", flat=True))
            expected = {
                pk
                for pk, sig in stored.items()
                if similarity(sig, probe, 128) >= wanted
                and (wanted < 0.8 or any(a == b for a, b in zip(bands[pk], probe_bands, strict=True)))
            }
            assert found == expected, wanted
            if wanted == 0.8:
                assert len(found) >= 10
        estimates = dict(Note.objects.annotate(e=JaccardEstimate("signature", probe)).values_list("pk", "e"))
        assert estimates == {pk: similarity(sig, probe, 128) for pk, sig in stored.items()}
    with connections["default"].cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")
    plan = Note.objects.filter(signature__similar=(probes[0], 0.8)).explain()
    for name in NOTE_BTREES:
        assert f"Bitmap Index Scan on {name}" in plan
    assert "Seq Scan" not in plan


def test_similar_notes_of_a_note(migrated: str) -> None:
    rng = random.Random(13)
    words = _text(rng, 200).split()
    original = Note.objects.create(body=" ".join(words))
    copy = Note.objects.create(body=_variant(rng, words, 2))
    Note.objects.create(body=_text(random.Random(14), 200))
    found = [(n.pk, n.similarity) for n in similar_notes(original)]
    estimate = similarity(
        np.array(copy.signature, dtype=np.uint64), np.array(original.signature, dtype=np.uint64), 128
    )
    assert found == [(copy.pk, estimate)]


def _stored(pk: int) -> int | None:
    """The fingerprint in the row (not the instance's)."""
    return Article.objects.values_list("fingerprint", flat=True).get(pk=pk)


def test_save_with_update_fields_of_the_source_refreshes_the_fingerprint(migrated: str) -> None:
    """save(update_fields=["body"]) (Django calls pre_save only for the fields listed) and a
    save() of an instance loaded with only() (Django lists the loaded fields itself) store the
    new text's fingerprint; update fields without the source leave it as it is."""
    rng = random.Random(21)
    first, second, third = _text(rng), _text(rng), _text(rng)
    article = Article.objects.create(title="a", body=first)
    article.body = second
    article.save(update_fields=["body"])
    assert (article.fingerprint, _stored(article.pk)) == (simdb.fingerprint(second),) * 2

    loaded = Article.objects.only("body").get(pk=article.pk)
    loaded.body = third
    loaded.save()
    assert (loaded.fingerprint, _stored(article.pk)) == (simdb.fingerprint(third),) * 2

    article = Article.objects.get(pk=article.pk)
    Article.objects.filter(pk=article.pk).update(fingerprint=1)
    article.title = "b"
    article.save(update_fields=["title"])  # the source is not written: neither is the fingerprint
    assert _stored(article.pk) == 1 and Article.objects.get(pk=article.pk).title == "b"


def test_a_save_override_that_adds_the_source_to_update_fields(migrated: str) -> None:
    """The fingerprint joins update_fields where Django saves (save_base), after the model's own
    save() has chosen them."""
    from django.test.utils import isolate_apps

    with isolate_apps("django_app.articles"):

        class Cleaned(Article):
            class Meta:
                proxy = True
                app_label = "articles"

            def save(self, *args: object, **kwargs: object) -> None:
                self.body = self.body.strip()
                if kwargs.get("update_fields") is not None:
                    kwargs["update_fields"] = {*kwargs["update_fields"], "body"}  # type: ignore[misc]
                super().save(*args, **kwargs)  # type: ignore[arg-type]

        rng = random.Random(22)
        text = _text(rng)
        article = Cleaned.objects.create(title="a", body=_text(rng))
        article.body, article.title = f"  {text}  ", "b"
        article.save(update_fields=["title"])
    assert _stored(article.pk) == simdb.fingerprint(text)


def test_update_or_create_and_the_documented_bypasses(migrated: str) -> None:
    """update_or_create saves the new text's fingerprint; QuerySet.update() and bulk_update()
    bypass pre_save (documented), and compute_fingerprints fills the fields bulk_update needs."""
    rng = random.Random(23)
    first, second, third = _text(rng), _text(rng), _text(rng)
    article, created = Article.objects.update_or_create(title="a", defaults={"body": first})
    assert created and _stored(article.pk) == simdb.fingerprint(first)
    article, created = Article.objects.update_or_create(title="a", defaults={"body": second})
    assert not created and (article.fingerprint, _stored(article.pk)) == (simdb.fingerprint(second),) * 2

    Article.objects.filter(pk=article.pk).update(body=third)
    assert _stored(article.pk) == simdb.fingerprint(second)  # stale, as the README says
    article.body = first
    Article.objects.bulk_update([article], ["body"])
    assert _stored(article.pk) == simdb.fingerprint(second)  # stale, as the README says
    Article.objects.bulk_update([article], ["body", *compute_fingerprints([article])])
    assert _stored(article.pk) == simdb.fingerprint(first)


def test_bulk_create_fingerprints_in_one_call(migrated: str) -> None:
    """bulk_create sketches its rows in one call (all 50, though it inserts them 20 at a time),
    save() its one row; what is stored and set on the instances is each text's own."""
    from django.db import connection, models
    from django.test.utils import isolate_apps

    calls: list[list[str]] = []

    class Counted(FingerprintField):
        def compute_many(self, texts: Any) -> list[int | None]:
            calls.append(list(texts))
            return super().compute_many(texts)

    with isolate_apps("django_app.articles"):

        class Counting(models.Model):
            body = models.TextField()
            fingerprint = Counted(source="body")

            class Meta:
                app_label = "articles"

        with connection.schema_editor() as editor:
            editor.create_model(Counting)
        rng = random.Random(24)
        texts = [_text(rng) for _ in range(49)] + [""]
        made = Counting.objects.bulk_create([Counting(body=text) for text in texts], batch_size=20)
        assert calls == [texts]
        expected = [simdb.fingerprint(text) if text else None for text in texts]
        assert [item.fingerprint for item in made] == expected
        assert list(Counting.objects.order_by("pk").values_list("fingerprint", flat=True)) == expected
        calls.clear()
        one = Counting.objects.create(body=texts[0])
        one.body = texts[1]
        one.save()
        assert calls == [[texts[0]], [texts[1]]]
        assert Counting.objects.get(pk=one.pk).fingerprint == one.fingerprint == expected[1]


def _valid_btrees(dsn: str, prefix: str) -> dict[str, bool]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT c.relname, x.indisvalid FROM pg_index AS x JOIN pg_class AS c ON c.oid = x.indexrelid"
            " WHERE starts_with(c.relname, %s)",
            [prefix + "_"],
        ).fetchall()
    return dict(rows)


@pytest.mark.parametrize("kind", ["simhash", "jaccard"])
def test_add_index_concurrently(migrated: str, kind: str) -> None:
    """Django's AddIndexConcurrently and RemoveIndexConcurrently in a non-atomic migration: one
    CREATE (DROP) INDEX CONCURRENTLY per B-tree, each executed on its own; the B-trees are valid."""
    from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
    from django.db.migrations.loader import MigrationLoader

    connection = connections["default"]
    if kind == "simhash":
        model, index = "article", SimhashIndex(fields=["fingerprint"], name="art_c", max_distance=2, blocks=4)
        count = 6  # C(4, 2) permuted tables
    else:
        model, index = (
            "note",
            JaccardIndex(fields=["signature"], name="note_c", threshold=0.9, permutations=128),
        )
        count = len(index.btree_names())
    before = MigrationLoader(connection).project_state()
    add = AddIndexConcurrently(model, index)
    after = before.clone()
    add.state_forwards("articles", after)
    with connection.schema_editor(collect_sql=True, atomic=False) as editor:
        add.database_forwards("articles", editor, before, after)
    assert len(editor.collected_sql) == count
    assert all(line.startswith("CREATE INDEX CONCURRENTLY ") for line in editor.collected_sql)

    with connection.schema_editor(atomic=False) as editor:
        add.database_forwards("articles", editor, before, after)
    assert _valid_btrees(migrated, index.name) == dict.fromkeys(index.btree_names(), True)

    remove = RemoveIndexConcurrently(model, index.name)
    with connection.schema_editor(collect_sql=True, atomic=False) as editor:
        remove.database_forwards("articles", editor, after, before)
    assert editor.collected_sql == [
        f'DROP INDEX CONCURRENTLY IF EXISTS "{name}";' for name in index.btree_names()
    ]
    with connection.schema_editor(atomic=False) as editor:
        remove.database_forwards("articles", editor, after, before)
    assert _valid_btrees(migrated, index.name) == {}


def test_attach_builds_only_the_btrees_the_table_lacks(migrated: str) -> None:
    """attach (and the first sync after a deferred attach) builds no B-tree the table already has
    under another name (SimhashIndex's); other settings get simdb's own; dropped later (a Django
    migration removing SimhashIndex), the next sync builds simdb's."""
    rng = random.Random(6)
    article = Article.objects.create(title="a", body=_text(rng))
    fingerprint = simdb.fingerprint(article.body)
    own = [f"simdb_other_p{n}" for n in range(10)]  # C(5, 3): blocks=5
    with psycopg.connect(migrated, autocommit=True) as conn:
        schema.ensure_schema(conn)
        blocks = Article._meta.indexes[0].layout(64).plan.blocks
        for name, spec in (("arts", SimhashSpec(3, blocks)), ("other", SimhashSpec(3, 5))):
            app_column.attach_in_table(
                conn,
                name,
                "public.articles_article",
                "id",
                "fingerprint",
                "body",
                spec=spec,
                defer_btrees=True,
            )
            keep.sync(conn, name)  # (the first fill builds the B-trees attach deferred)
        shared = ["articles_article_pkey", "simdb_arts_key", "simdb_arts_unfilled"]
        others = ["simdb_other_key", *own, "simdb_other_unfilled"]
        assert _table_btrees(migrated) == sorted([*BTREES, *shared, *others])
        for name in ("arts", "other"):
            found = query.near(conn, index.get(conn, name), fingerprint)
            assert [(match.key, match.distance) for match in found] == [(str(article.pk), 0)]

        conn.execute("DROP INDEX article_fp_p2")  # as a migration removing SimhashIndex would
        keep.sync(conn, "arts")
        rebuilt = [name for name in BTREES if name != "article_fp_p2"] + ["simdb_arts_p2"]
        assert _table_btrees(migrated) == sorted([*rebuilt, *shared, *others])


def test_a_failed_bulk_create_leaves_no_wrong_fingerprint(migrated: str) -> None:
    """A bulk_create that fails while preparing its instances (an unsaved related row) leaves
    them announced; later saves and bulk_creates still store each text's own fingerprint."""
    from django.db import connection, models
    from django.test.utils import isolate_apps

    with isolate_apps("django_app.articles"):

        class Reply(models.Model):
            article = models.ForeignKey(Article, on_delete=models.CASCADE, db_constraint=False)
            body = models.TextField()
            fingerprint = FingerprintField(source="body")

            class Meta:
                app_label = "articles"

        with connection.schema_editor() as editor:
            editor.create_model(Reply)
        rng = random.Random(25)
        saved = Article.objects.create(title="a", body=_text(rng))
        first = Reply(article=saved, body=_text(rng))
        with pytest.raises(ValueError, match="unsaved related object"):
            Reply.objects.bulk_create([first, Reply(article=Article(title="unsaved"), body=_text(rng))])
        other = Reply.objects.create(article=saved, body=_text(rng))
        assert Reply.objects.get(pk=other.pk).fingerprint == simdb.fingerprint(other.body)
        first.body = _text(rng)
        Reply.objects.bulk_create([first, Reply(article=saved, body=_text(rng))])
        stored = list(Reply.objects.order_by("pk").values_list("body", "fingerprint"))
        assert stored == [(body, simdb.fingerprint(body)) for body, _ in stored] and len(stored) == 3
