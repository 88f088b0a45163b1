"""A side table that follows an application's table: simdb's own table, fed by `simdb sync` from
the application's key and text columns (simdb.follow.side; the application's table is not altered)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from simdb.errors import InvalidParameter
from simdb.index.storage.base import OwnTable, TextSource

if TYPE_CHECKING:
    from simdb.index.scheme import IndexSQL


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

    def refuse_writes(self, index: IndexSQL, what: str) -> None:
        """Each sync makes the rows those of the table (a compare removes keys it lacks), so what
        ingest, delete or prune wrote would last only until then: refused, as for the column kind."""
        raise InvalidParameter(
            f"{what} does not write index {index.name!r}: it follows {self.schema}.{self.table}"
            f".{self.text_column}, and each sync makes its rows those of that table",
            f"write {self.schema}.{self.table} (each sync then brings its rows here), or put documents"
            " in an index of their own: `simdb create NAME`",
        )

    def text_source(self) -> TextSource:
        return TextSource(self.schema, self.table, self.key_column, self.text_column)

    def as_dict(self) -> dict[str, object]:
        return {
            "storage": self.kind,
            "table": f"{self.schema}.{self.table}",
            "key_column": self.key_column,
            "text_column": self.text_column,
        }
