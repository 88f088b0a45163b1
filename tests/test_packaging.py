"""sql/ and migrations/ ship inside the wheel and are found there, not only in a checkout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from simdb import schema

ROOT = Path(__file__).resolve().parent.parent


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
    (wheel,) = tmp_path.glob("simdb-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("sql", "migrations"):
        shipped = {
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        assert shipped and {f"simdb/{name}" for name in shipped} <= names

    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    probe = (
        "import simdb.resources, simdb.schema;"
        "print(simdb.resources.resource_dir('sql'));"
        "print(simdb.resources.resource_dir('migrations'));"
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
