"""simdb.aio on a psycopg AsyncConnection answers as the sync API on the same index, in both
modes; the bound handles (simdb.api, simdb.aio) are the same functions."""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import numpy as np
import psycopg
import pytest
from support import Conn, code_blocks, doc, jaccard_corpus

import simdb
from simdb import aio, ingest, query
from simdb.errors import IndexNotFound, InputError, InvalidParameter
from simdb.follow import app_column, keep
from simdb.index import lifecycle as index
from simdb.index.modes import Index, JaccardSpec, SimhashSpec, Sketch
from simdb.sketch.features import Features

T = TypeVar("T")


def run_async(dsn: str, work: Callable[[aio.AsyncConnection], Awaitable[T]]) -> T:
    """`work` on a fresh autocommit AsyncConnection, run to the end."""

    async def main() -> T:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            return await work(conn)

    return asyncio.run(main())


def _simhash_data() -> dict[str, int]:
    """Random fingerprints, and near copies of some (1 to 4 bits flipped)."""
    rng = random.Random(29)
    values = {f"k{number}": rng.getrandbits(64) for number in range(300)}
    for number in range(60):
        flipped = values[f"k{number}"]
        for bit in rng.sample(range(64), 1 + number % 4):
            flipped ^= 1 << bit
        values[f"n{number}"] = flipped
    return values


def _rows(conn: Conn, made: Index) -> list[tuple[Any, ...]]:
    return conn.execute(
        psycopg.sql.SQL("SELECT key, {}::text, size, extension FROM {} ORDER BY key").format(
            psycopg.sql.Identifier(made.sketch_column), made.table
        )
    ).fetchall()


def _indexes(conn: Conn, mode: str) -> tuple[Index, Index, dict[str, Sketch]]:
    """Two empty indexes of one mode ("a" written by the sync API, "b" by simdb.aio), and data."""
    if mode == "simhash":
        spec: SimhashSpec | JaccardSpec = SimhashSpec(max_distance=4)
        data: dict[str, Sketch] = dict(_simhash_data())
    else:
        spec = JaccardSpec(threshold=0.8)
        data = {}
    a, b = index.create(conn, "a", spec), index.create(conn, "b", spec)
    if mode == "jaccard":
        data = {key: a.sketch(text) for key, text in jaccard_corpus().items()}
    return a, b, data


@pytest.mark.parametrize("mode", ["simhash", "jaccard"])
def test_aio_loads_writes_and_queries_as_the_sync_api(conn: Conn, dsn: str, mode: str) -> None:
    a, b, data = _indexes(conn, mode)
    sizes = {key: len(key) for key in data}
    extensions = {key: ("txt" if number % 3 else None) for number, key in enumerate(data)}
    probes = list(data)[::7]
    deleted = [*list(data)[1::11], "no such key"]

    rows = [ingest.Row(key, sketch, sizes[key], extension=extensions[key]) for key, sketch in data.items()]
    assert ingest.store_rows(conn, a, rows) == (len(data), 0)
    expected_near = {key: query.near(conn, a, data[key]) for key in probes}
    expected_near_key = {key: query.near_key(conn, a, key, limit=5) for key in probes}
    filters = query.Filters(True, "txt", 4, 1.5)
    expected_filtered = {key: query.near(conn, a, data[key], filters=filters) for key in probes}
    tight = {"max_distance": 2} if mode == "simhash" else {"min_similarity": 0.95}
    expected_tight = {key: query.near(conn, a, data[key], **tight) for key in probes}  # type: ignore[arg-type]

    async def work(aconn: aio.AsyncConnection) -> dict[str, Any]:
        loaded = await aio.get(aconn, "b")
        first = await aio.store_rows(aconn, "b", rows)
        again = await aio.store_rows(aconn, loaded, rows)  # unchanged: no writes
        return {
            "loaded": loaded,
            "stored": (first, again),
            "near": {key: await aio.near(aconn, "b", data[key]) for key in probes},
            "near_key": {key: await aio.near_key(aconn, loaded, key, limit=5) for key in probes},
            "filtered": {key: await aio.near(aconn, loaded, data[key], filters=filters) for key in probes},
            "tight": {key: await aio.near(aconn, loaded, data[key], **tight) for key in probes},  # type: ignore[arg-type]
        }

    got = run_async(dsn, work)
    assert got["loaded"] == index.get(conn, "b")
    assert got["stored"] == ((len(data), 0), (0, 0))
    assert _rows(conn, a) == _rows(conn, b)
    assert got["near"] == expected_near
    assert any(len(found) > 1 for found in got["near"].values())  # near copies were found
    assert got["near_key"] == expected_near_key
    assert got["filtered"] == expected_filtered
    assert any(found != got["near"][key] for key, found in got["filtered"].items())  # filters dropped some
    assert got["tight"] == expected_tight

    assert ingest.delete(conn, a, deleted) == len(deleted) - 1
    assert run_async(dsn, lambda aconn: aio.delete(aconn, "b", deleted)) == len(deleted) - 1
    assert _rows(conn, a) == _rows(conn, b)


def test_aio_stores_changed_values_as_store_does(conn: Conn, dsn: str) -> None:
    a, b, data = _indexes(conn, "simhash")
    first = dict(list(data.items())[:50])
    changed = {**{key: int(value) ^ 1 for key, value in list(first.items())[:10]}, "new": 7}
    ingest.store(conn, a, first)
    expected = ingest.store(conn, a, {**first, **changed})

    async def work(aconn: aio.AsyncConnection) -> tuple[tuple[int, int], ...]:
        return (
            await aio.store(aconn, b, first, new_keys=True),  # copied straight in
            await aio.store(aconn, b, {**first, **changed}, new_keys=True),  # "new" was not: upserted
        )

    assert run_async(dsn, work) == ((50, 0), expected) == ((50, 0), (1, 10))
    assert _rows(conn, a) == _rows(conn, b)


def test_aio_refuses_as_the_sync_api(conn: Conn, dsn: str) -> None:
    made = index.create(conn, "a")
    ingest.store(conn, made, {"x": 1})

    with pytest.raises(IndexNotFound, match="no index named 'nope'"):
        run_async(dsn, lambda aconn: aio.near(aconn, "nope", 1, 3))
    with pytest.raises(InputError, match="index 'a' has no key 'y'"):
        run_async(dsn, lambda aconn: aio.near_key(aconn, "a", "y"))
    with pytest.raises(InputError, match="index 'a' has no key 'y'"):
        query.near_key(conn, made, "y")
    with pytest.raises(InvalidParameter, match=r"max distance 40 is outside 0\.\.3"):
        run_async(dsn, lambda aconn: aio.near(aconn, "a", 1, 40))


def test_aio_on_an_index_in_the_applications_table(conn: Conn, dsn: str) -> None:
    """aio.sync fills an in-table index; loading, queries and near_key on it; writes are refused
    as in the sync API. A side table's handle syncs too."""
    body = " ".join(f"word{i} topic{i % 11}" for i in range(300))
    conn.execute("CREATE TABLE public.articles (id bigserial PRIMARY KEY, body text, fp bigint)")
    conn.execute(
        "INSERT INTO public.articles (body) VALUES (%s), (%s), ('other text, far away')", (body, body + " x")
    )
    app_column.attach_in_table(conn, "arts", "public.articles", "id", "fp", "body")
    synced = run_async(dsn, lambda aconn: aio.sync(aconn, "arts"))
    assert synced.as_dict() == {"filled": 3, "empty": 0}
    assert run_async(dsn, lambda aconn: aio.sync(aconn, "arts", full=True)).as_dict() == {
        "filled": 0,
        "empty": 0,
        "unchanged": 3,
        "cleared": 0,
    }
    made = index.get(conn, "arts")
    expected = query.near_key(conn, made, "1")

    async def work(aconn: aio.AsyncConnection) -> tuple[Index, list[query.Match]]:
        return await aio.get(aconn, "arts"), await aio.near_key(aconn, "arts", "1")

    loaded, found = run_async(dsn, work)
    assert loaded == made
    assert found == expected == [query.Match("1", None, 0), query.Match("2", None, found[1].distance)]
    with pytest.raises(InvalidParameter, match="delete does not write index 'arts'"):
        run_async(dsn, lambda aconn: aio.delete(aconn, "arts", ["1"]))

    keep.attach(conn, "side", "public.articles", "id", "body")
    conn.execute("DELETE FROM public.articles WHERE id = 3")

    async def side() -> tuple[dict[str, object], list[query.Match]]:
        async with await aio.connect(dsn) as db:
            handle = await db.index("side")
            return (await handle.sync()).as_dict(), await handle.near_key("1")

    report, near = asyncio.run(side())
    assert report == {"added": 2, "updated": 0, "unchanged": 0, "removed": 0, "empty": 0}
    assert near == expected
    with pytest.raises(InvalidParameter, match="store does not write index 'side'"):
        run_async(dsn, lambda aconn: aio.store(aconn, "side", {"x": 1}))
    with pytest.raises(InvalidParameter, match="store does not write index 'arts'"):
        run_async(dsn, lambda aconn: aio.store(aconn, "arts", {"x": 1}))
    with simdb.connect(dsn) as db:  # the sync handle: nothing left to do
        again = db.index("side").sync().as_dict()
        assert (again["added"], again["updated"], again["removed"], again["queued"]) == (0, 0, 0, 0)


TEXTS = {
    "a": " ".join(f"alpha{i} beta{i % 7}" for i in range(1000)),
    "b": " ".join(f"alpha{i} beta{i % 7}" for i in range(1000)) + " more",
    "c": "a different document about something else",
}


def test_the_bound_handle_is_the_sync_api(conn: Conn, dsn: str) -> None:
    made = index.create(conn, "docs")
    with simdb.connect(dsn) as db:
        docs = db.index("docs")
        assert docs.add(TEXTS) == (3, 0)
        assert docs.add({"c": made.sketch(TEXTS["c"])}) == (0, 0)  # a sketch is stored as given
        assert _rows(conn, made) == sorted(
            (key, str(simdb.to_signed(made.sketch(text))), None, None) for key, text in TEXTS.items()
        )  # type: ignore[arg-type]
        near = docs.near(text=TEXTS["a"], k=3)
        assert near == query.near(conn, made, made.sketch(TEXTS["a"]), 3)
        assert [match.key for match in near] == ["a", "b"]
        assert docs.near(made.sketch(TEXTS["a"]), limit=1) == near[:1]
        assert docs.near_key("b") == query.near_key(conn, made, "b")
        with pytest.raises(InvalidParameter, match="not both or neither"):
            docs.near()
        assert docs.delete(["a", "zz"]) == 1
        assert [match.key for match in docs.near(text=TEXTS["a"])] == ["b"]
        assert db.index("new", create=True).index == index.get(conn, "new")


def test_the_async_bound_handle_is_simdb_aio(conn: Conn, dsn: str) -> None:
    made = index.create(conn, "pages", JaccardSpec(threshold=0.5))

    async def work() -> dict[str, Any]:
        async with await aio.connect(dsn) as db:
            pages = await db.index("pages")
            return {
                "added": await pages.add(TEXTS),
                "near": await pages.near(text=TEXTS["a"]),
                "near_key": await pages.near_key("b", min_similarity=0.9),
                "deleted": await pages.delete(["a"]),
                "after": await pages.near(text=TEXTS["a"]),
            }

    got = asyncio.run(work())
    assert got["added"] == (3, 0)
    signature = made.sketch(TEXTS["a"])
    assert [match.key for match in got["near"]] == ["a", "b"]
    assert query.Match("b", 1.0) in got["near_key"]
    assert got["deleted"] == 1
    assert got["after"] == query.near(conn, made, signature)
    assert np.array_equal(query.stored(conn, made, "b").sketch, made.sketch(TEXTS["b"]))  # type: ignore[union-attr,arg-type]


def test_the_readme_snippets_run(dsn: str, conn: Conn) -> None:
    """docs/python.md: the stand-alone example, then the handle's and simdb.aio's."""
    blocks = code_blocks(doc("python"), "python")
    (first,) = [block for block in blocks if "ensure_schema(conn)" in block]
    (handle,) = [block for block in blocks if "simdb.connect(" in block]
    (asynchronous,) = [block for block in blocks if "aio.connect(" in block]
    for block in (first, handle, asynchronous):
        scope: dict[str, Any] = {}
        exec(compile(block.replace("postgresql://localhost/mydb", dsn), "docs/python.md", "exec"), scope)
        if "main" in scope:
            asyncio.run(scope["main"]())
    assert conn.execute("SELECT key FROM simdb.docs ORDER BY key").fetchall() == [("a",), ("c",)]


class _SketchThreads:
    """The threads that ran Index.sketch while installed (a profile hook in every thread), and
    the event loop's longest stall, as a ticker task that wakes every millisecond sees it."""

    def __init__(self) -> None:
        self.threads: list[int] = []
        self.stall = 0.0
        self._code = Index.sketch.__code__

    def _hook(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is self._code:
            self.threads.append(threading.get_ident())

    def __enter__(self) -> _SketchThreads:
        sys.setprofile(self._hook)
        threading.setprofile(self._hook)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]

    async def ticker(self, done: asyncio.Event) -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.stall = max(self.stall, now - last)
            last = now


def test_the_async_handle_sketches_long_texts_off_the_event_loop(conn: Conn, dsn: str) -> None:
    """A text past SKETCH_ON_LOOP_CHARS is sketched in a worker thread, for near and add alike;
    the answers are the sync handle's."""
    made = index.create(conn, "docs")
    long_text = " ".join(f"word{n % 7919} other{n % 613}" for n in range(5_000))  # 90 KB
    watched = _SketchThreads()

    async def work() -> tuple[int, list[query.Match], tuple[int, int]]:
        done = asyncio.Event()
        ticker = asyncio.create_task(watched.ticker(done))
        async with await aio.connect(dsn) as db:
            docs = await db.index("docs")
            with watched:
                added = await docs.add({"long": long_text})
                found = await docs.near(text=long_text + " one more word")
        done.set()
        await ticker
        return threading.get_ident(), found, added

    loop_thread, found, added = asyncio.run(work())
    print(f"longest stall of the event loop: {watched.stall * 1000:.1f} ms")
    assert added == (1, 0)
    assert found == query.near(conn, made, made.sketch(long_text + " one more word"))
    assert [match.key for match in found] == ["long"]
    assert len(watched.threads) >= 2 and loop_thread not in watched.threads


def test_the_first_short_text_of_a_kind_loads_the_kernels_off_the_event_loop(conn: Conn, dsn: str) -> None:
    """A short text whose kind (mode, features, spec, bits) this process has not sketched yet goes
    to a worker thread, which loads the kernels it needs; the next short text stays on the loop."""
    made = index.create(conn, "pages", JaccardSpec(threshold=0.5), features=Features("char", 7))
    short = "a short text, sketched on the event loop once its kernels are loaded"
    watched = _SketchThreads()

    async def work() -> tuple[int, list[int], list[int], list[query.Match]]:
        async with await aio.connect(dsn) as db:
            pages = await db.index("pages")
            with watched:
                await pages.add({"a": short})
                first = list(watched.threads)
                found = await pages.near(text=short)
        return threading.get_ident(), first, watched.threads[len(first) :], found

    loop_thread, first, then, found = asyncio.run(work())
    assert first and loop_thread not in first
    assert then == [loop_thread]
    assert found == query.near(conn, made, made.sketch(short)) == [query.Match("a", 1.0)]


class _CountingCursor(psycopg.AsyncCursor[Any]):
    """An async cursor that counts the statements it runs."""

    statements = 0

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        _CountingCursor.statements += 1
        return await super().execute(*args, **kwargs)


def test_aio_by_name_keeps_the_loaded_index_until_the_catalog_changes(conn: Conn, dsn: str) -> None:
    """aio.near by name loads the index once per database (one catalog read by key per call after
    that, shared by a second connection), and sees a drop and re-create of the index."""
    made = index.create(conn, "docs", SimhashSpec(max_distance=4))
    data = _simhash_data()
    ingest.store(conn, made, data)
    probe = data["n3"]
    expected = query.near(conn, made, probe)

    async def counted(aconn: aio.AsyncConnection, index_name: str) -> tuple[list[query.Match], int]:
        before = _CountingCursor.statements
        found = await aio.near(aconn, index_name, probe)
        return found, _CountingCursor.statements - before

    async def work() -> list[tuple[list[query.Match], int]]:
        results = []
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as aconn:
            aconn.cursor_factory = _CountingCursor
            results.append(await counted(aconn, "docs"))
            results.append(await counted(aconn, "docs"))
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as other:
                other.cursor_factory = _CountingCursor
                results.append(await counted(other, "docs"))
            await asyncio.to_thread(remake)
            results.append(await counted(aconn, "docs"))
            results.append(await counted(aconn, "docs"))
        return results

    def remake() -> None:
        with psycopg.connect(dsn, autocommit=True) as own:
            index.drop(own, "docs")
            again = index.create(own, "docs", SimhashSpec(max_distance=1))
            ingest.store(own, again, {key: data[key] for key in ("k3", "n3", "k4")})

    first, second, shared, remade, kept = asyncio.run(work())
    assert first[0] == second[0] == shared[0] == expected
    assert len(expected) == 2
    assert (second[1], shared[1]) == (2, 2)  # the catalog's version, then the query
    assert first[1] > 2 and remade[1] == first[1]  # loaded again
    assert (
        remade[0]
        == kept[0]
        == query.near(conn, index.get(conn, "docs"), probe)
        == [query.Match("n3", None, 0)]
    )
    assert kept[1] == 2
