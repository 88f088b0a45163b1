"""simdb serve in a real browser: the distribution's Chromium driven by Playwright, against uvicorn
serving a fresh database of planted near-duplicates (tests/support/corpus.py).

Skipped where /usr/bin/chromium or playwright is missing, unless SIMDB_REQUIRE_BROWSER=1 (CI),
where that fails instead."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from support import simdb
from support.corpus import SCRIPT, write_folder
from support.serve import browser, chromium_missing, running

from simdb import cli
from simdb.serve import create_app, token_for

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    missing = chromium_missing()
    if missing is not None:
        if os.environ.get("SIMDB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SIMDB_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    with browser() as launched:
        yield launched


@pytest.fixture(scope="module")
def database(
    admin_dsn: str, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[str, str]]]:
    """A fresh database with index docs (k = 6) of the planted corpus's files: (DSN, {key: text})."""
    name = f"simdb_browser_{os.getpid()}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template_db)
            )
        )
    url = make_conninfo(admin_dsn, dbname=name)
    folder = tmp_path_factory.mktemp("served") / "docs"
    keys = write_folder(folder)
    # SimHash (spec 2), as in test_serve.py: the pairs and distances below are of its fingerprints
    create = ["create", "docs", "--max-distance", "6", "--fingerprint-spec", "2"]
    for args in (create, ["ingest", "docs", str(folder)]):
        with pytest.raises(SystemExit) as done:
            cli.run(["--dsn", url, *args])
            raise SystemExit(0)
        assert done.value.code in (0, None)
    yield url, keys
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="module")
def served(database: tuple[str, dict[str, str]]) -> Iterator[str]:
    with running(create_app(database[0])) as url:
        yield url


@pytest.fixture
def page(chromium: Any, served: str) -> Iterator[Any]:
    context = chromium.new_context(base_url=served, viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()


def _key(keys: dict[str, str], name: str) -> str:
    return next(key for key in keys if key.endswith("/" + name))


def test_clusters_page_lists_the_planted_clusters(page: Any, database: tuple[str, dict[str, str]]) -> None:
    _, keys = database
    page.goto("/i/docs/clusters")
    clusters = page.locator("section.cluster")
    assert clusters.count() == 3
    listed = [sorted(clusters.nth(at).locator("td.key").all_inner_texts()) for at in range(3)]
    assert listed == [
        sorted(_key(keys, name) for name in group)
        for group in (
            ("alpha.txt", "alpha-copy.txt", "alpha-draft.txt"),
            ("beta.txt", "beta-edit.txt"),
            ("script.txt", "script-copy.txt"),
        )
    ]
    page.select_option("#keep", "last")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/clusters?keep=last")
    kept = page.locator("section.cluster").first.locator("tr.member.keep td.key").inner_text()
    assert kept == _key(keys, "alpha.txt")  # (the same time added for all: the last key wins)


def test_side_by_side_marks_the_edited_words(page: Any, database: tuple[str, dict[str, str]]) -> None:
    _, keys = database
    page.goto("/i/docs/clusters?keep=first")
    page.locator("section.cluster").first.locator("a.compare").first.click()
    page.wait_for_url("**/compare?**")
    # alpha-copy.txt (kept) and alpha-draft.txt differ in word 120 only
    original = keys[_key(keys, "alpha-copy.txt")].split(" ")[120]
    assert page.locator("#side-del mark.del").all_inner_texts() == [original]
    assert page.locator("#side-ins mark.ins").all_inner_texts() == ["quokka"]
    assert page.locator("#side-del h3").inner_text() == _key(keys, "alpha-copy.txt")
    assert float(page.locator("#jaccard").inner_text()) < 1
    assert int(page.locator("#score").inner_text()) <= 6


def test_search_finds_a_pasted_copy(page: Any, database: tuple[str, dict[str, str]]) -> None:
    _, keys = database
    copy = keys[_key(keys, "beta.txt")].replace("\n", " \n", 3)
    page.goto("/i/docs/search")
    page.fill("#text", copy)
    page.click("#search")
    page.wait_for_selector("#matches")
    found = page.locator("tr.match td.key").all_inner_texts()
    assert sorted(found) == sorted([_key(keys, "beta.txt"), _key(keys, "beta-edit.txt")])
    page.locator("tr.match").first.get_by_role("button", name="side by side").click()
    page.wait_for_selector("#side-ins")
    assert page.locator("#side-del h3").inner_text() == "your text"
    assert page.locator("#side-ins h3").inner_text() in found


def test_the_plots_render(page: Any) -> None:
    page.goto("/i/docs/pictures")
    bars = page.locator("#histogram svg rect.bar")
    counts = {
        bars.nth(at).get_attribute("data-value"): bars.nth(at).get_attribute("data-count")
        for at in range(bars.count())
    }
    assert sum(map(int, counts.values())) == 4  # (the 4 pairs within 6 bits)
    assert page.locator("#histogram svg").is_visible() and bars.first.bounding_box()["height"] > 0
    assert page.locator("#calibration svg circle.point").count() == 2 * 3 * 9
    assert page.locator("#calibration svg polyline.curve.recall").count() == 3


def test_the_csv_export_is_what_dedup_prints(
    page: Any, database: tuple[str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = database
    for rule in ("first", "shortest"):
        page.goto(f"/i/docs/clusters?keep={rule}")
        with page.expect_download() as downloading:
            page.click("#export")
        saved = Path(downloading.value.path()).read_text(encoding="utf-8")
        code, printed, _ = simdb(capsys, "--dsn", url, "dedup", "docs", "--keep", rule)
        assert code == 0 and saved == printed and saved.startswith("cluster,key,action\n")


def test_a_script_in_a_document_is_shown_as_text(page: Any, database: tuple[str, dict[str, str]]) -> None:
    _, keys = database
    page.goto("/i/docs/clusters")
    page.goto(f"/i/docs/compare?a={_key(keys, 'script.txt')}&b={_key(keys, 'script-copy.txt')}")
    assert page.locator("#side-del pre.doc").inner_text().startswith(SCRIPT)
    assert page.evaluate("window.__pwned") is None and "pwned" not in page.title()
    assert page.locator("main script").count() == 0


def test_a_key_naming_the_password_file_is_refused(page: Any, database: tuple[str, dict[str, str]]) -> None:
    _, keys = database
    answer = page.goto(f"/i/docs/compare?a=/etc/passwd&b={_key(keys, 'alpha.txt')}")
    assert answer.status == 404
    assert page.locator("#message").inner_text() == "index 'docs' has no key '/etc/passwd'"
    assert "root:" not in page.content()


def test_a_server_beyond_the_loopback_wants_its_token(
    chromium: Any, database: tuple[str, dict[str, str]]
) -> None:
    token = token_for("0.0.0.0", None)  # (what `simdb serve --host 0.0.0.0` makes up)
    assert token is not None
    with running(create_app(database[0], token=token)) as url:
        context = chromium.new_context()
        try:
            opened = context.new_page()
            assert opened.goto(url + "/").status == 401
            assert opened.goto(url + "/i/docs/clusters").status == 401
            assert opened.goto(f"{url}/?token={token}").status == 200
            assert opened.goto(url + "/i/docs/clusters").status == 200  # (its cookie from then on)
            assert opened.locator("section.cluster").count() == 3
        finally:
            context.close()
