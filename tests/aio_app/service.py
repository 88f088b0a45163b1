"""An example service: "near-duplicates of this text" over HTTP, from a psycopg async pool.

Run it with `uvicorn --factory aio_app.service:app_from_environment` (SIMDB_DSN names the database, SIMDB_INDEX the index).
The index's parameters are loaded once at startup; each request borrows a pooled connection.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, HTTPException
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from simdb import aio
from simdb.errors import SimdbError
from simdb.index.modes import Index
from simdb.sketch.features import EmptyDocument


class Query(BaseModel):
    text: str
    k: int | None = None  # default: the index's own k
    limit: int | None = None


class Found(BaseModel):
    key: str
    distance: int | None = None
    similarity: float | None = None


def create_app(dsn: str, index_name: str) -> FastAPI:
    """The service on the database `dsn`, answering from index `index_name`."""
    state: dict[str, Index] = {}
    pool = AsyncConnectionPool(dsn, kwargs={"autocommit": True}, min_size=1, max_size=4, open=False)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await pool.open()
        async with pool.connection() as conn:
            state["index"] = await aio.get(conn, index_name)
        yield
        await pool.close()

    app = FastAPI(lifespan=lifespan)

    @app.post("/near")
    async def near(query: Query) -> list[Found]:
        """The stored documents near this text, nearest first."""
        made = state["index"]
        try:
            value = made.sketch(query.text)
            async with pool.connection() as conn:
                matches = await aio.near(conn, made, value, query.k, limit=query.limit)
        except (
            SimdbError,
            EmptyDocument,
        ) as error:  # an empty text, k above the index's: the client's mistake
            raise HTTPException(status_code=422, detail=str(error)) from error
        return [Found(**match.as_dict()) for match in matches]  # type: ignore[arg-type]

    @app.put("/documents")
    async def add(documents: dict[str, str]) -> dict[str, int]:
        """Store {key: text}."""
        made = state["index"]
        async with pool.connection() as conn:
            inserted, updated = await aio.store(
                conn, made, {key: made.sketch(text) for key, text in documents.items()}
            )
        return {"inserted": inserted, "updated": updated}

    return app


def app_from_environment() -> FastAPI:
    """The service as uvicorn's --factory makes it."""
    return create_app(os.environ["SIMDB_DSN"], os.environ.get("SIMDB_INDEX", "docs"))
