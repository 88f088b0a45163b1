"""Test databases: SIMDB_TEST_DSN when set, else a private embedded PostgreSQL for the session.

A template database is migrated once; each test gets a fresh copy of it (CREATE DATABASE ...
TEMPLATE), so tests are isolated and still fast. Never a mock.

Distributed indexes are tested on the Citus coordinator at SIMDB_CITUS_DSN (`.ci/citus start`
makes one with two workers); without it those tests are skipped, or fail where
SIMDB_REQUIRE_CITUS=1 (CI).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from support import (
    cleared_citus,
    fresh_database,
    remove_folder,
    remove_leftovers,
    remove_test_folders,
    run_folder,
    with_db,
)

from simdb import schema, warmup
from simdb.db.embedded import EmbeddedServer


@pytest.fixture(scope="session", autouse=True)
def _kernels_compiled() -> None:
    """The kernels compiled (or loaded from numba's cache) before any test, as `simdb init` does
    after an install: otherwise the first test to sketch, whichever it is, would also see the
    one-time "compiling its kernels" notice (test_startup checks it with a cache of its own)."""
    warmup.warm()


@pytest.fixture(scope="session", autouse=True)
def _no_leftovers_of_killed_runs() -> None:
    """Earlier runs killed before their clean-up left folders (and servers) in the temp folder."""
    remove_leftovers()


@pytest.fixture(autouse=True)
def _remove_test_folders() -> Iterator[None]:
    """The folders a test made with traversable_tempdir go when it ends (after its fixtures)."""
    yield
    remove_test_folders()


@pytest.fixture(scope="session")
def admin_dsn() -> Iterator[str]:
    """A DSN with the right to create databases."""
    configured = os.environ.get("SIMDB_TEST_DSN")
    if configured:
        yield configured
        return
    folder = run_folder("simdb-test-")
    server = EmbeddedServer(folder / "home")
    try:
        yield server.start()
    finally:
        remove_folder(folder)  # (stops the server first)


@pytest.fixture(scope="session")
def template_db(admin_dsn: str) -> Iterator[str]:
    name = f"simdb_tpl_{os.getpid()}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    schema.upgrade(with_db(admin_dsn, name))
    yield name
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture
def dsn(admin_dsn: str, template_db: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh, migrated database for one test; SIMDB_DSN points at it for CLI calls."""
    with fresh_database(admin_dsn, template_db) as url:
        monkeypatch.setenv("SIMDB_DSN", url)
        yield url


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(dsn, autocommit=True) as connection:
        yield connection


@pytest.fixture
def empty_db(admin_dsn: str) -> Iterator[str]:
    """A fresh database without simdb's schema (for migration tests)."""
    with fresh_database(admin_dsn) as url:
        yield url


@pytest.fixture(scope="session")
def citus_dsn() -> str:
    """The Citus coordinator's DSN, with simdb's schema at head."""
    configured = os.environ.get("SIMDB_CITUS_DSN")
    if not configured:
        if os.environ.get("SIMDB_REQUIRE_CITUS") == "1":
            pytest.fail(
                "SIMDB_REQUIRE_CITUS=1 but SIMDB_CITUS_DSN is not set: start a cluster with .ci/citus"
            )
        pytest.skip("no Citus cluster: set SIMDB_CITUS_DSN (see .ci/citus)")
    schema.upgrade(configured)
    return configured


@pytest.fixture
def citus_conn(
    citus_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A connection to the Citus coordinator (cleared_citus); SIMDB_DSN points there."""
    monkeypatch.setenv("SIMDB_DSN", citus_dsn)
    with cleared_citus(citus_dsn) as connection:
        yield connection
