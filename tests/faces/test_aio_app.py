"""The example FastAPI service (tests/aio_app) answers from a pool as the sync API does, through
httpx's ASGI transport against a real PostgreSQL (no server process)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from aio_app.service import create_app
from support import Conn

from simdb import ingest, query
from simdb.index import lifecycle as index

BASE = " ".join(f"alpha{i} beta{i % 7}" for i in range(1000))
TEXTS = {"a": BASE, "b": BASE + " more", "c": "a different document about something else entirely"}


def _calls(dsn: str, calls: list[tuple[str, str, object]]) -> list[tuple[int, Any]]:
    """(status, JSON) of each (method, path, body), in order, with the app's lifespan around them."""
    app = create_app(dsn, "docs")

    async def main() -> list[tuple[int, Any]]:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
                answers = []
                for method, path, body in calls:
                    response = await client.request(method, path, json=body)
                    answers.append((response.status_code, response.json()))
                return answers

    return asyncio.run(main())


def test_the_service_stores_and_answers_near_duplicates_as_the_sync_api(conn: Conn, dsn: str) -> None:
    made = index.create(conn, "docs")
    answers = _calls(
        dsn,
        [
            ("PUT", "/documents", TEXTS),
            ("PUT", "/documents", TEXTS),
            ("POST", "/near", {"text": BASE + " and"}),
            ("POST", "/near", {"text": BASE, "k": 0, "limit": 1}),
            ("POST", "/near", {"text": ""}),
            ("POST", "/near", {"text": BASE, "k": 9}),
        ],
    )
    expected = [match.as_dict() for match in query.near(conn, made, made.sketch(BASE + " and"))]
    assert [match["key"] for match in expected] == ["a", "b"]
    assert answers[:4] == [
        (200, {"inserted": 3, "updated": 0}),
        (200, {"inserted": 0, "updated": 0}),
        (200, [{**match, "similarity": None} for match in expected]),
        (200, [{"key": "a", "distance": 0, "similarity": None}]),
    ]
    assert answers[4][0] == answers[5][0] == 422
    assert "max distance 9 is outside 0..3" in answers[5][1]["detail"]


def test_concurrent_requests_share_the_pool(conn: Conn, dsn: str) -> None:
    """Twenty requests at once, on a pool of at most four connections, each answered right."""
    made = index.create(conn, "docs")
    texts = {f"t{number}": f"{BASE} variant {number}" for number in range(20)}
    ingest.store(conn, made, {key: made.sketch(text) for key, text in texts.items()})
    app = create_app(dsn, "docs")

    async def main() -> list[Any]:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
                calls = [client.post("/near", json={"text": text, "k": 0}) for text in texts.values()]
                return [response.json() for response in await asyncio.gather(*calls)]

    answers = asyncio.run(main())
    expected = [
        [m.as_dict() for m in query.near(conn, made, made.sketch(text), 0)] for text in texts.values()
    ]
    assert answers == [[{**match, "similarity": None} for match in found] for found in expected]
