"""Find the `sql/` and `migrations/` folders, inside an installed wheel or in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # simdb/


def resource_dir(name: str) -> Path:
    """simdb/<name> in a wheel (the build copies it there), else <checkout>/<name>."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"simdb's {name}/ folder is missing from {_PACKAGE}; reinstall simdb")


def sql_text(path: str) -> str:
    """The text of one file in sql/, by its path there: "catalog/0001_catalog_tables.sql"."""
    return (resource_dir("sql") / path).read_text(encoding="utf-8")


def function_sql(name: str, version: int) -> str:
    """sql/functions/NAME.vVERSION.sql: one version of one SQL function, as CREATE OR REPLACE FUNCTION."""
    return sql_text(f"functions/{name}.v{version}.sql")
