"""The README's screenshots of `simdb serve` (clusters, side by side, search), made again with

    python -m support.screenshots [ADMIN_DSN]     (from the tests/ folder)

ADMIN_DSN (default: SIMDB_TEST_DSN, else postgresql://postgres@127.0.0.1:5432/postgres) may create
databases: a scratch one is made, filled with tests/support/corpus.py's planted near-duplicates,
served, photographed by the distribution's Chromium, and dropped. The PNGs go to tests/screenshots/.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from simdb import cli, schema
from simdb.serve import create_app
from support.corpus import write_folder
from support.serve import browser, running

OUT = Path(__file__).resolve().parents[1] / "screenshots"
SCRATCH = "simdb_screenshots"


def _simdb(*args: str) -> None:
    try:
        cli.run(list(args))
    except SystemExit as done:
        if done.code:
            raise


def main(admin_dsn: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(SCRATCH)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(SCRATCH)))
    dsn = make_conninfo(admin_dsn, dbname=SCRATCH)
    folder = Path(tempfile.gettempdir()) / "simdb-demo" / "articles"
    shutil.rmtree(folder.parent, ignore_errors=True)
    try:
        schema.upgrade(dsn)
        keys = write_folder(folder)
        _simdb("--dsn", dsn, "create", "articles", "--max-distance", "6")
        _simdb("--dsn", dsn, "ingest", "articles", str(folder))
        key = {path.rsplit("/", 1)[1]: path for path in keys}
        OUT.mkdir(exist_ok=True)
        with running(create_app(dsn)) as url, browser() as chromium:
            page = chromium.new_page(base_url=url, viewport={"width": 1200, "height": 760})
            page.goto("/i/articles/clusters?keep=first")
            page.screenshot(path=OUT / "clusters.png")
            page.goto(f"/i/articles/compare?a={key['alpha.txt']}&b={key['alpha-draft.txt']}")
            page.screenshot(path=OUT / "side-by-side.png")
            page.goto("/i/articles/search")
            page.fill("#text", keys[key["beta.txt"]].replace("river", "rivers", 1))
            page.click("#search")
            page.wait_for_selector("#matches")
            page.locator("#matches").scroll_into_view_if_needed()
            page.screenshot(path=OUT / "search.png")
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(SCRATCH)))
    print(f"wrote {', '.join(sorted(p.name for p in OUT.glob('*.png')))} to {OUT}")


if __name__ == "__main__":
    main(
        sys.argv[1]
        if len(sys.argv) > 1
        else os.environ.get("SIMDB_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")
    )
