"""sql/ and migrations/ ship inside the wheel and are found there, not only in a checkout; the
project's files depend on no one machine's folders."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from support import ROOT

from simdb import schema
from simdb.cli import DISTRIBUTION


def test_wheel_carries_sql_and_migrations(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
    )
    (wheel,) = tmp_path.glob("simdb_pg-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("sql", "migrations"):
        shipped = {
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        assert shipped and {f"simdb/{name}" for name in shipped} <= names
    templates = {
        p.relative_to(ROOT).as_posix() for p in (ROOT / "simdb" / "serve" / "templates").glob("*.html")
    }
    assert len(templates) == 7 and templates <= names  # (simdb serve's pages: package data)

    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    probe = (
        "import simdb.db.resources, simdb.schema;"
        "print(simdb.db.resources.resource_dir('sql'));"
        "print(simdb.db.resources.resource_dir('migrations'));"
        "print(simdb.schema.head_revision())"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(unpacked)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == [
        str(unpacked / "simdb" / "sql"),
        str(unpacked / "simdb" / "migrations"),
        schema.HEAD,
    ]
    version = subprocess.run(
        [sys.executable, "-c", "from simdb.cli import run; run(['--version'])"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(unpacked)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (version.returncode, version.stdout) == (0, "simdb, version 0.1.0\n")


def test_the_distribution_is_named_simdb_pg_as_the_readme_installs_it() -> None:
    """`pip install simdb` gets an unrelated project of that name (2015)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (project["name"], project["scripts"]) == ("simdb-pg", {"simdb": "simdb.cli:run"})
    assert project["name"] == DISTRIBUTION
    readme = (ROOT / "README.md").read_text()
    assert "`pip install simdb-pg`" in readme and not re.search(r"pip install simdb(?![-\w])", readme)


def _project_files() -> list[Path]:
    """The tracked files (git ls-files), or in an unpacked sdist every file in it."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode == 0 and listed.stdout:
        return [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    return [path for path in ROOT.rglob("*") if path.is_file() and "__pycache__" not in path.parts]


def test_no_file_names_an_absolute_path_of_one_machine() -> None:
    """.ci/citus looked for the Citus archive at a fixed folder of one machine."""
    machine_folder = re.compile(r"(?<![\w.~/-])/" + "work" + r"\b")  # (split: this file has no such path)
    named = [
        str(path.relative_to(ROOT))
        for path in _project_files()
        if path.is_file() and machine_folder.search(path.read_text(errors="replace"))
    ]
    assert named == []


def test_citus_archive_is_found_only_through_citus_archive_or_the_relative_shared_vendor(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "citus", checkout / ".ci" / "citus")
    fake = tmp_path / "pg_config"  # answers with an empty folder: Citus is not installed there
    fake.write_text(f"#!/bin/sh\necho {tmp_path / 'pg'}\n")
    fake.chmod(0o755)
    environment = {k: v for k, v in os.environ.items() if k != "CITUS_ARCHIVE"} | {"PG_CONFIG": str(fake)}

    def install(**extra: str) -> tuple[int, str]:
        done = subprocess.run(
            ["bash", str(checkout / ".ci" / "citus"), "install"],
            env=environment | extra,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.returncode, done.stderr.strip()

    relative = f"{checkout}/../shared/vendor/citus-13.2.2.tar.gz"
    assert install() == (
        1,
        f"no Citus 13.2.2 archive at {relative}: put citus-13.2.2.tar.gz in ../shared/vendor beside "
        "the checkout, or set CITUS_ARCHIVE to its path",
    )
    (tmp_path / "shared" / "vendor").mkdir(parents=True)
    (tmp_path / "shared" / "vendor" / "citus-13.2.2.tar.gz").write_bytes(b"not the archive")
    code, err = install()
    assert code == 1 and err.endswith(f"{relative} is not the vendored Citus 13.2.2 archive")
    given = tmp_path / "elsewhere.tar.gz"
    given.write_bytes(b"not it either")
    code, err = install(CITUS_ARCHIVE=str(given))
    assert code == 1 and err.endswith(f"{given} is not the vendored Citus 13.2.2 archive")
