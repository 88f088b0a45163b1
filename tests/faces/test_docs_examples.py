"""Every code block of the README and of docs/ runs as written.

Python is executed, SQL is run, and each command line of a shell block runs in bash, in a folder
holding the files the page names, against a fresh database prepared as the page's prose assumes
(CONTEXTS: an `articles` table, an index the page queries). The blocks of a page run in order on
one database. What stands for the reader's own (their DSN, their home folder) is replaced by the
test's (STAND_INS); `psql -c "..."` runs its SQL on the test's connection.

A block marked `<!-- another way: a fresh database -->` shows another way to do what the blocks
above it did: the indexes and tables they made are dropped and the page's context made again
before it runs.

Two things do not run, each with its reason: a block with `<!-- not run: WHY -->` right above it,
and a shell command that runs until stopped, installs, or is the suite itself (NOT_RUN). The
test fails on any other block that does not run, and on a not-run note without a reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import subprocess
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from support import ROOT, Conn

import simdb
from simdb.index import catalog
from simdb.index import lifecycle as indexes

PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
GENERATED = {"docs/cli-reference.md", "docs/sql-reference.md"}  # (tests/faces/test_docs.py checks these)
LANGUAGES = {"python", "sql", "sh", "ini"}
BLOCK = re.compile(
    r"(?:<!-- (?:not run: (?P<why>[^\n]*?)|(?P<fresh>another way: a fresh database)) -->\n)?"
    r"^```(?P<lang>\w+)\n(?P<body>.*?)^```",
    re.M | re.S,
)

# Shell commands left out wherever they stand, and why (matched in each `&&`-joined part).
NOT_RUN = {
    "python3 -m venv": "makes a fresh virtual environment: CI's .ci/run does, then the test command",
    ". .venv/bin/activate": "enters that environment (the test runs in the suite's own)",
    "pip install": "installs simdb: CI installs it into a fresh environment before the suite",
    "pytest": "the suite itself",
    "simdb bench": "measures for minutes at the sizes shown: tests/faces/test_cli.py, tests/db/test_jaccard.py"
    " and tests/unit/test_quality.py run each kind of bench small",
    "simdb serve": "serves until stopped: tests/faces/test_serve.py and test_serve_browser.py drive it",
    "--watch": "syncs until stopped: tests/db/test_queue.py and test_app_column.py watch",
    "simdb db ": "starts and stops simdb's own server, which may be the one this suite runs on:"
    " tests/db/test_embedded.py",
    "citus_add_node": "adds a machine to the cluster: tests/citus/test_citus_rebalance.py adds a worker",
}
# ... and on a page that runs on one server (docs/citus.md runs on the Citus cluster):
NEEDS_CITUS = {"--distributed": "needs a Citus cluster: docs/citus.md's blocks run on one"}


@dataclass
class Block:
    page: str
    line: int
    language: str
    body: str
    not_run: str | None  # the reason given in the page, if any
    fresh: bool  # another way to do what the blocks above did: it starts from the page's context

    @property
    def label(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: str) -> list[Block]:
    text = (ROOT / page).read_text()
    return [
        Block(page, text[: m.start("body")].count("\n") + 1, m["lang"], m["body"], m["why"], bool(m["fresh"]))
        for m in BLOCK.finditer(text)
        if m["lang"] in LANGUAGES
    ]


# --- what a page's prose assumes ---------------------------------------------------------------

TEXTS = {
    "report.txt": "The quarterly report on the gardens of the city, their flowers and their visitors.\n" * 20,
    "copy of report.txt": "The quarterly report on the gardens of the town, their flowers and their visitors.\n"
    * 20,
    "notes.txt": "Notes on the river walk, the bridges and the old mill by the water.\n" * 10,
}


def _workdir(tmp_path: Path) -> Path:
    """The reader's folder: ./folder with a report and a near copy of it, notes.jsonl, table.csv,
    records.jsonl and ./corpus."""
    for sub in ("folder", "corpus"):
        (tmp_path / sub).mkdir()
        for name, text in TEXTS.items():
            (tmp_path / sub / name).write_text(text)
    (tmp_path / "corpus" / "a.txt").write_text(TEXTS["report.txt"])
    (tmp_path / "notes.jsonl").write_text('{"key": "n1", "text": "a note on the river walk and the mill"}\n')
    (tmp_path / "records.jsonl").write_text('{"key": "r1", "text": "a record of the bridges by the water"}\n')
    (tmp_path / "table.csv").write_text("key,text\nt1,a row about the quarterly gardens report\n")
    return tmp_path


def _articles(conn: Conn, *, fp: bool) -> None:
    """The application's table of articles that applications.md and sqlalchemy.md start from."""
    column = ", fp bigint" if fp else ""
    conn.execute(
        "CREATE TABLE public.articles (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, title text,"
        f" body text{column})"
    )
    for n, text in enumerate([TEXTS["report.txt"], TEXTS["copy of report.txt"], TEXTS["notes.txt"]], 1):
        conn.execute("INSERT INTO public.articles (title, body) VALUES (%s, %s)", (f"t{n}", text))
    conn.execute(
        "INSERT INTO public.articles VALUES (42, 't42', %s)", (TEXTS["report.txt"],)
    )  # (the pages' id)


def _nothing(conn: Conn, dsn: str, work: Path) -> dict[str, Any]:
    return {}


def _readme(conn: Conn, dsn: str, work: Path) -> dict[str, Any]:
    """The README attaches an index to an articles table with an fp column."""
    _articles(conn, fp=True)
    return {}


def _applications(conn: Conn, dsn: str, work: Path) -> dict[str, Any]:
    _articles(conn, fp=False)
    return {"cur": conn.cursor(), "body": TEXTS["notes.txt"]}


def _sql(conn: Conn, dsn: str, work: Path) -> dict[str, Any]:
    """docs/sql.md queries index docs (a row at fingerprint a70392059ddfcbce) and jaccard index
    pages (a row keyed https://example.com/a)."""
    for command in (
        ["create", "docs", "--fingerprint-spec", "2", "-k", "3"],
        ["create", "pages", "--mode", "jaccard"],
        ["ingest", "pages", "-"],
    ):
        stdin = (
            b'{"key": "https://example.com/a", "text": "a page of words"}\n' if command[-1] == "-" else None
        )
        _cli(command, dsn, work, stdin)
    conn.execute("INSERT INTO simdb.docs (key, fingerprint) VALUES ('a', simdb.from_hex('a70392059ddfcbce'))")
    return {}


def _sqlalchemy(conn: Conn, dsn: str, work: Path) -> dict[str, Any]:
    """docs/sqlalchemy.md: the articles table with its fp column, index articles_dups in it, a
    Session, a mapped Article, `text` to look for, and the connection of each driver."""
    _articles(conn, fp=True)
    attach = ["attach", "articles_dups", "--table", "public.articles", "--key-column", "id"]
    _cli([*attach, "--fingerprint-column", "fp", "--text-column", "body"], dsn, work)
    _cli(["sync", "articles_dups"], dsn, work)
    engine = sa.create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn))

    class Base(DeclarativeBase):
        pass

    class Article(Base):
        __tablename__ = "articles"
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str]

    return {
        "session": Session(engine),
        "Article": Article,
        "Base": type("Base", (DeclarativeBase,), {}),
        "Mapped": Mapped,
        "mapped_column": mapped_column,
        "select": sa.select,
        "simdb": simdb,
        "text": TEXTS["copy of report.txt"],
        "conn": conn,
    }


def _django(conn: Conn, dsn: str, work: Path) -> dict[str, Any]:
    """docs/django.md's models, defined in the example project's app (tests/django_app)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_app.settings")
    import django

    django.setup()
    from django.test.utils import isolate_apps

    return {"__name__": "django_app.articles.documented", WITHIN: lambda: isolate_apps("django_app.articles")}


CONTEXTS: dict[str, Callable[[Conn, str, Path], dict[str, Any]]] = {
    "README.md": _readme,
    "docs/cli.md": _readme,
    "docs/applications.md": _applications,
    "docs/sql.md": _sql,
    "docs/sqlalchemy.md": _sqlalchemy,
    "docs/django.md": _django,
}


# --- running ---------------------------------------------------------------------------------


def _cli(arguments: list[str], dsn: str, work: Path, stdin: bytes | None = None) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "simdb"), *arguments],
        cwd=work,
        env={**os.environ, "SIMDB_DSN": dsn},
        input=stdin,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, (arguments, done.stderr.decode())


def _stand_ins(text: str, dsn: str, work: Path) -> str:
    """What stands for the reader's own, replaced by the test's."""
    return text.replace("postgresql://localhost/mydb", dsn).replace("/home/me/", f"{work}/")


def _shell_line(line: str, conn: Conn, dsn: str, work: Path, not_run: dict[str, str]) -> list[str]:
    """Run one command line (its `&&` parts, less those `not_run` names); the parts left out."""
    command = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
    left_out, parts = [], []
    for part in (p.strip() for p in command.split("&&")):
        if not part:
            continue
        if any(pattern in part for pattern in not_run):
            left_out.append(part)
        elif part.startswith("psql -c "):
            conn.execute(shlex.split(part)[2])
        else:
            parts.append(part)
    if parts:
        venv = str(Path(sys.executable).parent)
        environment = {**os.environ, "SIMDB_DSN": dsn, "PATH": f"{venv}:{os.environ['PATH']}"}
        done = subprocess.run(
            ["bash", "-c", " && ".join(parts)], cwd=work, env=environment, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{' && '.join(parts)}\n{done.stdout}\n{done.stderr}"
    return left_out


WITHIN = "__within__"  # a context's key: what each of its Python blocks runs within


def _python(block: Block, namespace: dict[str, Any], dsn: str, work: Path) -> None:
    within = namespace.pop(WITHIN, contextlib.nullcontext)
    with within():
        _run_python(block, namespace, dsn, work)


def _run_python(block: Block, namespace: dict[str, Any], dsn: str, work: Path) -> None:
    source = _stand_ins(block.body, dsn, work)
    if re.search(r"^\s*(rows = )?await ", source, re.M) and "async def" not in source:
        _asyncpg(source, block.label, namespace, dsn)
        return
    module = types.ModuleType(namespace.pop("__name__", "documented"))  # (SQLAlchemy and Django read
    module.__dict__.update(namespace)  # the names a class's annotations use from its module)
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, block.label, "exec"), module.__dict__)
        main = module.__dict__.get("main")
        if asyncio.iscoroutinefunction(main):
            asyncio.run(main())
    finally:
        del sys.modules[module.__name__]


def _asyncpg(source: str, label: str, namespace: dict[str, Any], dsn: str) -> None:
    """A fragment with top-level awaits, as asyncpg's users write them: run in a coroutine with
    `conn` an asyncpg connection."""
    import asyncpg

    body = "".join(f"    {line}\n" for line in source.splitlines())
    exec(compile(f"async def _fragment(conn):\n{body}", label, "exec"), namespace)

    async def run() -> None:
        given = conninfo_to_dict(dsn)
        given["database"] = given.pop("dbname")
        connection = await asyncpg.connect(**given)
        try:
            await namespace["_fragment"](connection)
        finally:
            await connection.close()

    asyncio.run(run())


def _start_afresh(conn: Conn) -> None:
    """Every index and every table of schema public dropped."""
    for name in catalog.index_names(conn):
        indexes.drop(conn, name)
    for (table,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall():
        conn.execute(sql.SQL("DROP TABLE {} CASCADE").format(sql.Identifier("public", table)))


def _sql_block(block: Block, conn: Conn, dsn: str, work: Path) -> None:
    for statement in _stand_ins(block.body, dsn, work).split(";"):
        if statement.strip() and not statement.strip().startswith("--"):
            conn.execute(statement).fetchall()


def test_a_block_that_does_not_run_says_why() -> None:
    quiet = [
        block.label
        for page in PAGES
        for block in blocks(page)
        if block.not_run is not None and not block.not_run.strip()
    ]
    assert quiet == []


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, marks=[pytest.mark.citus] if p == "docs/citus.md" else [])
        for p in PAGES
        if p not in GENERATED and any(b.not_run is None for b in blocks(p))
    ],
)
def test_every_block_of_the_page_runs(
    page: str, dsn: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if page == "docs/citus.md":
        if not os.environ.get("SIMDB_CITUS_DSN") and not os.environ.get("SIMDB_REQUIRE_CITUS"):
            pytest.skip("docs/citus.md runs on a Citus cluster (SIMDB_CITUS_DSN)")
        conn: Conn = request.getfixturevalue("citus_conn")
        dsn = os.environ["SIMDB_DSN"]
    else:
        conn = request.getfixturevalue("conn")
    not_run = NOT_RUN if page == "docs/citus.md" else {**NOT_RUN, **NEEDS_CITUS}
    work = _workdir(tmp_path)
    context = CONTEXTS.get(page, _nothing)(conn, dsn, work)
    ran, left_out = 0, []
    for block in blocks(page):
        if block.not_run is not None:
            continue
        if block.fresh:
            _start_afresh(conn)
            context = CONTEXTS.get(page, _nothing)(conn, dsn, work)
        if block.language == "python":
            _python(block, dict(context), dsn, work)
        elif block.language == "sql":
            _sql_block(block, conn, dsn, work)
        elif block.language == "sh":
            for line in block.body.splitlines():
                left_out += _shell_line(line, conn, dsn, work, not_run)
        else:
            pytest.fail(f"{block.label}: a {block.language} block that no test runs: run it, or say why not")
        ran += 1
    assert ran, f"{page}: no block ran"
    for part in left_out:
        assert any(pattern in part for pattern in not_run)  # (each with its reason there)
