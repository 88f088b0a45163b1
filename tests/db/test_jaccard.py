"""Jaccard mode end to end: SQL band keys and estimates equal Python's, plain-SQL writers, the CLI,
attach, migrations and the evaluation (near, pairs and clusters against brute force: test_contract.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql
from sqlalchemy import create_engine, select
from sqlalchemy.pool import NullPool
from support import Conn, btree_values, jaccard_corpus, simdb

from simdb import ingest, query, schema
from simdb.errors import InvalidParameter
from simdb.follow import app_column, keep
from simdb.index import catalog, names
from simdb.index import lifecycle as index
from simdb.index.modes import JaccardIndex, JaccardSpec
from simdb.index.modes.base import SKETCH
from simdb.index.modes.jaccard import band_key, band_keys_array, bigint_array
from simdb.measure import evaluate
from simdb.sketch.bits import to_signed
from simdb.sketch.features import DEFAULT_FEATURES, feature_hashes
from simdb.sketch.minhash import Banding, document_signature, estimate, signature, to_stored
from simdb.sources import readers
from simdb.sqlalchemy import similar, similar_key


@pytest.fixture
def loaded(conn: Conn) -> tuple[JaccardIndex, dict[str, np.ndarray]]:
    made = index.create(conn, "docs", JaccardSpec(threshold=0.8))
    assert isinstance(made, JaccardIndex)
    signatures = {key: made.sketch(text) for key, text in jaccard_corpus().items()}
    ingest.store(conn, made, signatures)
    ingest.vacuum(conn, made)
    return made, signatures


def test_sql_band_keys_and_estimates_equal_python(
    conn: Conn, loaded: tuple[JaccardIndex, dict[str, np.ndarray]]
) -> None:
    made, signatures = loaded
    band_keys = btree_values(conn, made)
    texts = jaccard_corpus()
    v2 = {key: document_signature(texts[key], spec=2) for key in signatures}
    for key, signature_values in list(signatures.items())[:50]:
        row = conn.execute("SELECT signature FROM simdb.docs WHERE key = %s", (key,)).fetchone()
        assert row is not None
        assert np.array_equal(made.from_sql(row[0]), signature_values)
        # spec v3 stores the band keys themselves: those of the v2 signature of the same text
        assert [int(v) & (2**64 - 1) for v in band_keys[key]] == list(signature_values[: made.banding.bands])
        assert list(signature_values[: made.banding.bands]) == made.banding.keys(v2[key][: made.permutations])
        assert np.array_equal(signature_values[made.banding.bands :], v2[key][made.permutations :])
    a, b = signatures["d3"], signatures["d3_e06"]
    in_sql = conn.execute(
        "SELECT simdb.jaccard_estimate(%s, %s)", (made.to_sql(a), made.to_sql(b))
    ).fetchone()
    assert in_sql == (estimate(a, b),)  # the same double, not just close


@pytest.mark.parametrize("banding", [Banding(16, 8), Banding(4, 40), Banding(1, 64), Banding(20, 5)])
def test_a_query_band_keys_in_one_array_equal_each_band_key(conn: Conn, banding: Banding) -> None:
    """band_keys_array (a near query's keys, one band expression run per band) gives the B-trees' keys, band
    for band, with every rotation from 0 to 63 (Banding(1, 64)) and the extreme values."""
    rng = np.random.default_rng(5)
    signature_values = rng.integers(0, 2**64, size=192, dtype=np.uint64)
    signature_values[:4] = [0, 2**64 - 1, 2**63, 2**63 - 1]
    given = sql.SQL("%(s)s::bigint[]")
    keys = sql.SQL(", ").join(band_key(banding, number, given) for number in range(banding.bands))
    row = conn.execute(
        sql.SQL("SELECT {}, ARRAY[{}]").format(band_keys_array(banding, given), keys),
        {"s": bigint_array(signature_values)},
    ).fetchone()
    assert row is not None
    assert [int(v) & (2**64 - 1) for v in row[0]] == banding.keys(signature_values)
    assert row[0] == row[1] and len(row[0]) == banding.bands


def test_plain_sql_writers_get_the_same_band_keys(
    conn: Conn, loaded: tuple[JaccardIndex, dict[str, np.ndarray]]
) -> None:
    made, signatures = loaded
    conn.execute(
        "INSERT INTO simdb.docs (key, signature) VALUES ('from_sql', %s)", (made.to_sql(signatures["d5"]),)
    )
    assert [m.key for m in query.near(conn, made, signatures["d5"], min_similarity=1.0)] == [
        "d5",
        "d5_e00",
        "from_sql",
    ]
    for bad in ([1, 2, 3], [*made.to_sql(signatures["d5"])[:-1], None]):
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("INSERT INTO simdb.docs (key, signature) VALUES ('bad', %s)", (bad,))


def test_cli_on_a_jaccard_index(capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path) -> None:
    texts = jaccard_corpus()
    for key in ("d0", "d0_e02", "d0_e12", "u1"):
        (tmp_path / f"{key}.txt").write_text(texts[key])
    (tmp_path / "d0_copy.md").write_text(texts["d0"])
    code, out, _ = simdb(capsys, "create", "docs", "--mode", "jaccard", "--threshold", "0.75")
    assert (code, out) == (
        0,
        "created jaccard index docs: threshold 0.75, 128 permutations, 18 bands of 7 rows, features word:3, "
        "spec v3; it finds pairs at Jaccard >= 0.75 (as 128 MinHash values estimate it); "
        'SQL: simdb."docs"\n',
    )
    assert simdb(capsys, "ingest", "docs", str(tmp_path))[0] == 0
    code, out, _ = simdb(capsys, "query", "docs", "--file", str(tmp_path / "d0.txt"))
    lines = out.splitlines()
    assert code == 0 and lines[0] == "similarity  key" and lines[1] == f"     1.000  {tmp_path / 'd0.txt'}"
    assert {line.split()[1] for line in lines[1:]} >= {str(tmp_path / "d0.txt"), str(tmp_path / "d0_e02.txt")}
    code, out, _ = simdb(
        capsys, "query", "docs", "--key", str(tmp_path / "d0.txt"), "--threshold", "1", "--json"
    )
    assert json.loads(out) == [
        {"key": str(tmp_path / "d0.txt"), "similarity": 1.0},
        {"key": str(tmp_path / "d0_copy.md"), "similarity": 1.0},
    ]
    code, out, _ = simdb(capsys, "pairs", "docs")
    assert out.splitlines()[0] == "key_a,key_b,similarity"
    code, literal, _ = simdb(
        capsys, "fingerprint", "--mode", "jaccard", "--threshold", "0.75", "--file", str(tmp_path / "d0.txt")
    )
    with psycopg.connect(dsn) as conn:
        found = conn.execute("SELECT key, similarity FROM simdb.similar('docs', %s, 1)", (literal.strip(),))
        assert found.fetchall() == [(str(tmp_path / "d0.txt"), 1.0), (str(tmp_path / "d0_copy.md"), 1.0)]
    query_file = ("query", "docs", "--file", str(tmp_path / "d0.txt"))
    code, out, _ = simdb(capsys, *query_file)
    assert str(tmp_path / "d0_copy.md") in out
    code, out, _ = simdb(capsys, *query_file, "--same-extension")
    assert code == 0 and str(tmp_path / "d0_copy.md") not in out and str(tmp_path / "d0.txt") in out
    code, out, _ = simdb(capsys, "clusters", "docs", "--json")
    assert json.loads(out)["min_similarity"] == 0.75
    code, out, _ = simdb(capsys, "list", "--json")
    assert json.loads(out) == [
        {
            "name": "docs",
            "mode": "jaccard",
            "rows": 5,
            "features": "word:3",
            "spec_version": 3,
            "finds": "finds pairs at Jaccard >= 0.75 (as 128 MinHash values estimate it)",
            "placement": "local",
            "storage": "own",
            "threshold": 0.75,
            "permutations": 128,
            "bands": 18,
            "band_rows": 7,
        }
    ]


def test_cli_refuses_options_of_the_other_mode(capsys: pytest.CaptureFixture[str], dsn: str) -> None:
    simdb(capsys, "create", "docs", "--mode", "jaccard")
    simdb(capsys, "create", "near", "-k", "2")
    cases = {
        ("query", "docs", "--text", "hello there", "-k", "2"): "simdb: error: a Hamming distance does not "
        "apply to jaccard index 'docs' (it searches by Jaccard similarity: give --threshold)\n",
        ("query", "near", "--text", "hello there", "--threshold", "0.9"): "simdb: error: a minimum "
        "similarity does not apply to simhash index 'near' (it searches by Hamming distance: give --max-distance)\n",
        ("query", "docs", "--fingerprint", "00ff"): "simdb: error: --fingerprint does not apply to jaccard "
        "index 'docs' (query it with --text, --file or --key)\n",
        (
            "pairs",
            "docs",
            "--threshold",
            "0.5",
        ): "simdb: error: min similarity 0.5 is outside 0.8..1 for index "
        "'docs' (a jaccard index finds pairs at or above the threshold it was created with; create one with "
        "--threshold 0.5 for lower)\n",
        ("create", "x", "--mode", "jaccard", "--threshold", "1.5"): "simdb: error: threshold 1.5 is outside "
        "(0, 1) (use a Jaccard threshold such as 0.8)\n",
    }
    for args, message in cases.items():
        code, out, err = simdb(capsys, *args)
        assert (code, out, err) == (1, "", message), args
    code, _, err = simdb(capsys, "create", "x", "--mode", "jaccard", "-k", "2")
    assert code == 2 and "--max-distance applies to --mode simhash only" in err
    code, _, err = simdb(capsys, "create", "x", "--threshold", "0.9")
    assert code == 2 and "--threshold applies to --mode jaccard only" in err
    assert simdb(capsys, "list", "--json")[1].count('"name"') == 2  # nothing was created by the refusals


def test_sql_functions_name_the_mode(conn: Conn) -> None:
    index.create(conn, "jac", JaccardSpec())
    index.create(conn, "sim")
    with pytest.raises(psycopg.errors.WrongObjectType, match="index 'jac' is a jaccard index"):
        conn.execute("SELECT * FROM simdb.near('jac', 1)")
    with pytest.raises(psycopg.errors.WrongObjectType, match="index 'sim' is a simhash index"):
        conn.execute("SELECT * FROM simdb.similar_pairs('sim')")
    with pytest.raises(psycopg.errors.UndefinedObject, match="no index named 'nope'"):
        conn.execute("SELECT * FROM simdb.similar('nope', '{1}')")


def test_attach_and_sync_a_jaccard_index(conn: Conn) -> None:
    texts = jaccard_corpus()
    conn.execute("CREATE TABLE public.articles (id integer PRIMARY KEY, body text)")
    rows = [(1, texts["d2"]), (2, texts["d2_e02"]), (3, texts["u9"])]
    with conn.cursor() as cursor:
        cursor.executemany("INSERT INTO public.articles VALUES (%s, %s)", rows)
    made = keep.attach(conn, "arts", "public.articles", "id", "body", spec=JaccardSpec())
    report = keep.sync(conn, "arts")
    assert (report.added, report.updated) == (3, 0)
    assert [m.key for m in query.near(conn, made, made.sketch(texts["d2"]))] == ["1", "2"]
    conn.execute("UPDATE public.articles SET body = %s WHERE id = 3", (texts["d2_e01"],))
    conn.execute("DELETE FROM public.articles WHERE id = 2")
    report = keep.sync(conn, "arts")
    assert (report.added, report.updated, report.unchanged) == (0, 1, 0)
    assert [m.key for m in query.near(conn, made, made.sketch(texts["d2"]))] == ["1", "3"]


def test_migrations_down_and_up_with_a_jaccard_index(empty_db: str) -> None:
    schema.upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        made = index.create(conn, "jac", JaccardSpec(signature_spec=2))
        ingest.store(conn, made, {"a": made.sketch("some words to sign here")})
    schema.downgrade(empty_db, "0002")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('simdb.jac'), count(*) FROM simdb._indexes").fetchone() == (
            None,
            0,
        )
        assert conn.execute("SELECT simdb.jaccard_estimate('{1,2}', '{1,3}')").fetchone() == (0.5,)
    schema.upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == schema.HEAD


def test_migration_0015_gives_an_older_jaccard_index_the_one_array_query_keys(empty_db: str) -> None:
    """An index made before 0015 (its near statement with the 16 band_key expressions written out)
    answers the same after the migration, from the statement that builds the keys in one array."""
    schema.upgrade(empty_db, "0014")
    texts = jaccard_corpus()
    with psycopg.connect(empty_db, autocommit=True) as conn:
        made = index.create(conn, "jac", JaccardSpec(signature_spec=2))
        assert isinstance(made, JaccardIndex)
        ingest.store(conn, made, {key: made.sketch(texts[key]) for key in ("d2", "d2_e02", "u9")})
        written_out = (
            made.near_statement()
            .as_string(conn)
            .replace(
                band_keys_array(made.banding, SKETCH).as_string(conn),
                sql.SQL("ARRAY[{}]").format(sql.SQL(", ").join(made.btree_keys(SKETCH))).as_string(conn),
            )
        )
        for function in names.functions("jac"):
            conn.execute(sql.SQL("DROP FUNCTION IF EXISTS {}").format(function))
        made.create_functions(conn, written_out)
        catalog.set_near_sql(conn, "jac", written_out)
        before = [(m.key, m.similarity) for m in query.near(conn, made, made.sketch(texts["d2"]))]
        assert "ARRAY(SELECT" not in catalog.near_sql(conn, "jac") and len(before) == 2
    schema.upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == schema.HEAD
        assert "ARRAY(SELECT" in catalog.near_sql(conn, "jac")
        found = conn.execute(
            "SELECT key, similarity FROM simdb.similar('jac', %s)", (made.to_sql(made.sketch(texts["d2"])),)
        ).fetchall()
        assert [tuple(row) for row in found] == before


def test_evaluation_scores_both_modes_against_exact_jaccard(conn: Conn) -> None:
    texts = jaccard_corpus()
    originals = [readers.Document(key, text, 0) for key, text in texts.items() if "_" not in key]
    result = evaluate.evaluate(conn, originals, sample=1000, copies=60, max_edit=0.1, queries=20)
    kept, planted = evaluate.planted_corpus(originals, len(originals), 60, 0.1, 1)
    corpus = kept + planted
    sets = [frozenset(feature_hashes(document.text).tolist()) for document in corpus]
    exact = sum(
        len(sets[i] & sets[j]) / len(sets[i] | sets[j]) >= 0.8
        for i in range(len(sets))
        for j in range(i + 1, len(sets))
    )
    assert (
        len(kept) == 240
        and result.documents == 300
        and result.copies == 60
        and result.similar_pairs == exact > 5
    )
    jaccard, jaccard_v2, jaccard_v1, simhash, hand = result.modes
    assert (jaccard.mode, jaccard_v2.mode, jaccard_v1.mode, simhash.mode, hand.mode) == (
        "jaccard v3",
        "jaccard v2",
        "jaccard v1",
        "simhash v3",
        "hand-written",
    )
    # the hand-written band table verifies like signature spec v1 with the same bands: same pairs
    assert (hand.pairs, hand.true_pairs) == (jaccard_v1.pairs, jaccard_v1.true_pairs)
    for mode in result.modes:
        assert mode.precision == mode.true_pairs / mode.pairs and mode.recall == mode.true_pairs / exact
    assert jaccard.recall > simhash.recall  # edits up to 10% are beyond 3 bits of SimHash, not of MinHash
    assert conn.execute("SELECT count(*) FROM simdb._indexes").fetchone() == (0,)  # scratch indexes dropped


def test_bench_jaccard_mode_prints_both_modes_and_both_signature_specs(
    capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path
) -> None:
    for key, text in list(jaccard_corpus().items())[:60]:
        (tmp_path / f"{key}.txt").write_text(text)
    args = ("bench", "--mode", "jaccard", "--corpus", str(tmp_path), "--copies", "10", "--queries", "5")
    code, out, _ = simdb(capsys, *args, "--padding-rows", "100", "--json")
    figures = json.loads(out)
    assert code == 0 and figures["documents"] == 70 and figures["padding_rows"] == 100
    modes = ["jaccard v3", "jaccard v2", "jaccard v1", "simhash v3", "hand-written"]
    assert [m["mode"] for m in figures["modes"]] == modes
    assert all(
        m["padding_pairs"] == 0 and m["bytes_per_row"] > 0 < m["server_p50_ms"] and m["bulk_seconds"] > 0
        for m in figures["modes"]
    )
    hand = figures["modes"][-1]
    ratios = figures["vs_hand_written"]
    assert figures["roundtrip_p50_ms"] > 0 and list(ratios) == ["jaccard v3", "jaccard v2", "jaccard v1"]
    assert all(
        ratios[m["mode"]]["bytes_per_row"] == m["bytes_per_row"] / hand["bytes_per_row"]
        and ratios[m["mode"]]["bulk"] == m["bulk_seconds"] / hand["bulk_seconds"]
        for m in figures["modes"][:2]
    )
    code, out, _ = simdb(capsys, *args)
    assert code == 0 and out.splitlines()[2].split()[:3] == ["mode", "precision", "recall"]
    assert "bulk x" not in out  # no padding rows: the indexes bulk-loaded nothing to compare
    assert "against the hand-written table (round trip p50" in out
    code, _, err = simdb(capsys, *args, "--rows", "1000")  # simhash's size: refused, not ignored
    assert code == 2 and "--padding-rows" in err


def test_bench_jaccard_gives_a_bulk_ratio_only_with_padding_rows() -> None:
    """Without padding rows the indexes bulk-load nothing, and "bulk x0.00" was printed."""

    def figures(mode: str, kind: str, bulk_seconds: float) -> evaluate.ModeFigures:
        return evaluate.ModeFigures(
            mode, kind, "", 10, 9, 0.9, 0.9, 200.0, 1.0, bulk_seconds, 0.5, 0.9, 0.2, 1.0, 0
        )

    for padding_rows, bulk in ((0, 0.0), (1000, 3.0)):
        result = evaluate.Evaluation(
            documents=100,
            copies=10,
            max_edit=0.1,
            threshold=0.8,
            similar_pairs=9,
            queries=10,
            padding_rows=padding_rows,
            server="PostgreSQL",
            modes=[figures("jaccard v2", "jaccard", bulk), figures(evaluate.HAND_WRITTEN, "jaccard", 2.0)],
            roundtrip_p50_ms=0.1,
        )
        ratios = result.against_hand()["jaccard v2"]
        (line,) = [line for line in result.lines() if line.startswith("against the hand-written")]
        if padding_rows:
            assert ratios["bulk"] == 1.5 and "jaccard v2 bytes/row x1.00, bulk x1.50, p50 above" in line
        else:
            assert "bulk" not in ratios and "jaccard v2 bytes/row x1.00, p50 above the round trip" in line


def test_sqlalchemy_similar_equals_the_library(
    dsn: str, conn: Conn, loaded: tuple[JaccardIndex, dict[str, np.ndarray]]
) -> None:
    made, signatures = loaded
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn), poolclass=NullPool)
    try:
        with engine.connect() as session:
            found = session.execute(select(similar("docs", signatures["d4"]))).all()
            by_key = session.execute(select(similar_key("docs", "d4", 0.9))).all()
    finally:
        engine.dispose()
    expected = [(m.key, m.similarity) for m in query.near(conn, made, signatures["d4"])]
    assert [tuple(row) for row in found] == expected and len(expected) >= 3
    assert [tuple(row) for row in by_key] == [item for item in expected if item[1] >= 0.9]


def test_similar_plan_probes_every_band_once(
    conn: Conn, loaded: tuple[JaccardIndex, dict[str, np.ndarray]]
) -> None:
    made, signatures = loaded
    padding = made.random_sketches(np.random.default_rng(2), 5000)  # (a few rows: a scan is cheaper)
    ingest.store(conn, made, {f"pad{i}": sketch for i, sketch in enumerate(padding)})
    conn.execute("ANALYZE simdb.docs")
    plan = "\n".join(
        line
        for (line,) in conn.execute(
            "SELECT simdb.explain_similar('docs', %s)", (made.to_sql(signatures["d9"]),)
        )
    )
    assert plan.count("Bitmap Index Scan on docs_b") == made.banding.bands == 16, plan
    assert "BitmapOr" in plan and "Seq Scan" not in plan, plan


def test_signature_spec_1_indexes_are_still_made_and_read(
    capsys: pytest.CaptureFixture[str], dsn: str
) -> None:
    code, out, _ = simdb(capsys, "create", "old", "--mode", "jaccard", "--signature-spec", "1")
    assert code == 0 and "spec v1" in out
    code, printed, _ = simdb(
        capsys, "fingerprint", "--mode", "jaccard", "--signature-spec", "1", "--text", "a b c d"
    )
    assert code == 0 and printed.count(",") == 127  # the signature alone
    code, printed, _ = simdb(
        capsys, "fingerprint", "--mode", "jaccard", "--signature-spec", "2", "--text", "a b c d"
    )
    assert code == 0 and printed.count(",") == 127 + 64  # then the check's 64 words
    code, printed, _ = simdb(capsys, "fingerprint", "--mode", "jaccard", "--text", "a b c d")
    assert code == 0 and printed.count(",") == 15 + 64  # v3: the 16 band keys, then the check
    assert simdb(capsys, "ingest", "old", "-", stdin=b'{"key": "k", "text": "some words of text"}\n')[0] == 0
    code, out, _ = simdb(capsys, "query", "old", "--text", "some words of text", "--json")
    assert code == 0 and json.loads(out) == [{"key": "k", "similarity": 1.0}]
    code, _, err = simdb(capsys, "create", "bad", "--mode", "jaccard", "--signature-spec", "4")
    assert code == 1 and "unknown signature spec 4" in err


def test_a_signature_of_the_wrong_length_is_refused_not_answered_empty(conn: Conn) -> None:
    made = index.create(conn, "pages", JaccardSpec())
    text = jaccard_corpus()["d0"]
    ingest.store(conn, made, {"d0": made.sketch(text)})
    v1 = JaccardSpec(signature_spec=1).sketch(text, made.features)  # the signature alone
    with pytest.raises(
        psycopg.errors.InvalidParameterValue,
        match=r"takes signatures of 80 values \(spec v3\); this one is 128 values",
    ):
        conn.execute("SELECT * FROM simdb.similar('pages', %s)", (to_stored(v1),))
    assert conn.execute(
        "SELECT key FROM simdb.similar('pages', %s)", (made.to_sql(made.sketch(text)),)
    ).fetchall() == [("d0",)]


def test_a_signature_of_the_wrong_size_is_refused_with_a_short_context(conn: Conn) -> None:
    """The refusal's CONTEXT names the functions it passed through, not the
    index's whole statement (about 15 KB of generated SQL for a default jaccard index)."""
    index.create(conn, "pyjac", JaccardSpec())
    for statement in (
        "SELECT * FROM simdb.similar('pyjac', '{1,2,3}')",
        "SELECT * FROM simdb_internal.pyjac__near('{1,2,3}', 0.9)",
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue) as refused:
            conn.execute(statement)
        assert str(refused.value).startswith(
            "simdb: index 'pyjac' takes signatures of 80 values (spec v3); this one is 3 values"
        )
        context = refused.value.diag.context or ""
        assert "pyjac__near" in context and len(context) < 600, context


def test_an_application_column_keeps_v2_sketches_unless_told_and_is_checked(conn: Conn) -> None:
    """attach_in_table on a column the application fills: v2 by default (the sketches
    simdb.document_signature makes), a column of another spec's sketches is refused with the
    option to give, and --signature-spec 3 takes v3 sketches."""
    texts = jaccard_corpus()
    conn.execute("CREATE TABLE public.notes (id text PRIMARY KEY, sig bigint[])")
    v3 = JaccardSpec().sketch(texts["d4"], DEFAULT_FEATURES)
    conn.execute("INSERT INTO public.notes VALUES ('d4', %s)", (to_stored(v3),))
    with pytest.raises(InvalidParameter, match=r"holds sketches that index 'notes_alike' does not take"):
        app_column.attach_in_table(conn, "notes_alike", "public.notes", "id", "sig", spec=JaccardSpec())
    assert conn.execute("SELECT count(*) FROM simdb._indexes").fetchone() == (0,)  # nothing made
    made = app_column.attach_in_table(
        conn, "notes_alike", "public.notes", "id", "sig", spec=JaccardSpec(signature_spec=3)
    )
    assert made.spec_version == 3
    assert [m.key for m in query.near(conn, made, made.sketch(texts["d4"]))] == ["d4"]
    conn.execute("UPDATE public.notes SET sig = %s", (to_stored(document_signature(texts["d4"])),))
    index.drop(conn, "notes_alike")
    again = app_column.attach_in_table(conn, "notes_alike", "public.notes", "id", "sig", spec=JaccardSpec())
    assert again.spec_version == 2
    assert [m.key for m in query.near(conn, again, document_signature(texts["d4"]))] == ["d4"]


def test_sql_estimate_equals_python(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    rng = random.Random(8)
    base = [rng.getrandbits(64) for _ in range(3000)]
    pairs = []
    for shared in (0, 700, 1500, 2500, 3000):
        a = np.array(base[:3000], dtype=np.uint64)
        b = np.array(
            base[3000 - shared :] + [rng.getrandbits(64) for _ in range(3000 - shared)], dtype=np.uint64
        )
        pairs.append((signature(a, 64), signature(b, 64)))
    for sig_a, sig_b in pairs:
        row = conn.execute(
            "SELECT simdb.jaccard_estimate(%s, %s)",
            ([to_signed(int(v)) for v in sig_a], [to_signed(int(v)) for v in sig_b]),
        ).fetchone()
        assert row is not None and row[0] == pytest.approx(estimate(sig_a, sig_b), abs=1e-6)
    assert conn.execute("SELECT simdb.jaccard_estimate('{1,2}', '{1}')").fetchone() == (None,)
