"""A side table that follows an application's table: simdb's own table, fed by `simdb sync` from
the application's key and text columns (simdb.attach; the application's table is not altered)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from simdb.storage.base import OwnTable, TextSource


@dataclass(frozen=True)
class SideTable(OwnTable):
    """simdb."NAME", kept in step with schema.table's text column by key."""

    schema: str
    table: str
    key_column: str
    text_column: str

    kind: ClassVar[str] = "side"

    def describe(self) -> str:
        return f"follows {self.schema}.{self.table}.{self.text_column}"

    def text_source(self) -> TextSource:
        return TextSource(self.schema, self.table, self.key_column, self.text_column)

    def as_dict(self) -> dict[str, object]:
        return {
            "storage": self.kind,
            "table": f"{self.schema}.{self.table}",
            "key_column": self.key_column,
            "text_column": self.text_column,
        }
