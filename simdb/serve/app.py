"""The web application of `simdb serve`: a Starlette app over a pool of read-only connections.

Safety, as for any server: the app answers only requests with its token where it has one (a
`?token=` in the URL, then a cookie; or an `Authorization: Bearer` header); without a token it
answers only requests addressed to the loopback names (so that a web page elsewhere cannot reach
it through a DNS name rebound to 127.0.0.1). Every connection is read-only (default_transaction_
read_only), every template escapes what it shows, and no page runs a script (the Content Security
Policy allows none). The endpoints are plain functions: Starlette runs them in its thread pool,
each with a connection of the pool, so that one slow request does not hold up the others.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any

import jinja2
from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.templating import Jinja2Templates

from simdb import schema
from simdb.db.connection import Connection
from simdb.errors import SchemaMissing, SchemaNewer
from simdb.serve import views

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "simdb_token"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self';"
    " frame-ancestors 'none'; base-uri 'none'"
)


def new_token() -> str:
    return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    """Whether a listening address reaches this machine only."""
    import ipaddress

    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_for(host: str, given: str | None) -> str | None:
    """The token a server listening on `host` requires: the one given; else, on an address other
    than a loopback one, a new one (None: a loopback server without a token)."""
    if given:
        return given
    return None if is_loopback(host) else new_token()


def _configure(conn: Connection) -> None:
    """Each pooled connection: read-only whatever its role may do, and named in pg_stat_activity."""
    conn.execute("SET default_transaction_read_only = on")
    conn.execute("SET application_name = 'simdb serve'")


def check_schema(conn: Connection) -> None:
    """The database has simdb's schema at this simdb's revision (serve never migrates: it only reads)."""
    revision = schema.current_revision(conn)
    if revision is None:
        raise SchemaMissing(
            f"no simdb schema in database {conn.info.dbname!r}",
            "connect to the database that holds your indexes (--dsn, SIMDB_DSN)",
        )
    if revision != schema.HEAD:
        raise SchemaNewer(
            f"the simdb schema in database {conn.info.dbname!r} is at revision {revision}; this simdb"
            f" reads revision {schema.HEAD}",
            "run another simdb command once as the schema's owner (it migrates), or this index's simdb",
        )


def create_app(dsn: str, *, token: str | None = None, pool_size: int = 8) -> Starlette:
    """The app over the database `dsn`; with `token`, only requests that carry it are answered,
    without one only requests addressed to a loopback name."""

    def opened() -> ConnectionPool[Connection]:
        pool: ConnectionPool[Connection] = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            configure=_configure,
            open=False,
            name="simdb-serve",
        )
        pool.open(wait=True)
        try:
            with pool.connection() as conn:
                check_schema(conn)
        except BaseException:
            pool.close()
            raise
        return pool

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        pool = await run_in_threadpool(opened)
        app.state.pool = pool
        try:
            yield
        finally:
            await run_in_threadpool(pool.close)

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("simdb.serve", "templates"),
        autoescape=True,  # every value shown is escaped: a document's <script> is text
        undefined=jinja2.StrictUndefined,
    )
    app = Starlette(routes=views.ROUTES, lifespan=lifespan, exception_handlers=views.ERRORS)
    environment.globals["link"] = views.link
    environment.filters["score"] = views.score
    environment.filters["bytes"] = views.size
    app.state.templates = Jinja2Templates(env=environment)
    app.add_middleware(Guard, token=token)
    return app


class Guard:
    """The token (or, without one, the loopback Host), and the security headers of every answer."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused = self._refusal(request)
        from_url = refused is None and self.token is not None and "token" in request.query_params

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", POLICY.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),  # (a token in the URL stays here)
                    (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store"),
                ]
                if from_url and self.token is not None:
                    cookie: SimpleCookie = SimpleCookie()
                    cookie[COOKIE] = self.token
                    cookie[COOKIE]["httponly"] = True
                    cookie[COOKIE]["samesite"] = "Strict"
                    cookie[COOKIE]["path"] = "/"
                    headers.append((b"set-cookie", cookie[COOKIE].OutputString().encode()))
                message["headers"] = headers
            await send(message)

        if refused is not None:
            await refused(scope, receive, guarded)
            return
        await self.app(scope, receive, guarded)

    def _refusal(self, request: Request) -> PlainTextResponse | None:
        if self.token is None:
            host = request.headers.get("host", "")
            name = host if host.endswith("]") else host.rpartition(":")[0] or host
            if name in LOOPBACK_NAMES:
                return None
            return PlainTextResponse(
                f"simdb serve answers requests to 127.0.0.1 or localhost only (this one was for {host!r})\n",
                status_code=403,
            )
        authorization = request.headers.get("authorization", "")
        given = [
            request.query_params.get("token"),
            request.cookies.get(COOKIE),
            authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else None,
        ]
        expected = self.token.encode()
        if any(value is not None and secrets.compare_digest(value.encode(), expected) for value in given):
            return None
        return PlainTextResponse(
            "simdb serve needs its token: open the URL it printed (ending in ?token=...), or send"
            " Authorization: Bearer TOKEN\n",
            status_code=401,
            headers={"www-authenticate": "Bearer"},
        )
