"""What storage and placement read of an index: its name, table, B-tree columns and SQL pieces.

Each mode's Index provides all of it. Storage and placement take an index through this narrow
view and import no mode, so they stand below the modes that use them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from psycopg import sql

    from simdb.db.connection import Connection


class Placed(Protocol):
    """What storage asks of an index's placement: whether it is distributed, and to place the
    index's table."""

    @property
    def distributed(self) -> bool: ...

    def place_index(self, conn: Connection, index: IndexSQL) -> None: ...


class IndexSQL(Protocol):
    """An index as storage and placement see it: names and SQL expressions, no I/O of its own."""

    @property
    def name(self) -> str: ...

    @property
    def placement(self) -> Placed: ...

    @property
    def table(self) -> sql.Identifier: ...

    @property
    def columns(self) -> list[str]: ...

    @property
    def sketch_column(self) -> str: ...

    @property
    def nearest_first(self) -> sql.SQL: ...

    def sketch_definition(self) -> sql.Composable: ...

    def btree_keys(self, sketch: sql.Composable) -> list[sql.Composable]: ...

    def btree_columns(self, sketch: sql.Composable) -> list[sql.Composable]: ...

    def btrees(self, *, if_missing: bool = False) -> list[sql.Composed]: ...

    def table_near_statement(
        self, sketch: sql.Composable = ..., cutoff: sql.Composable = ...
    ) -> sql.Composed: ...

    def pairs_statement(self, rows: sql.Composable) -> sql.Composed: ...

    def score(self, stored: sql.Composable, query: sql.Composable) -> sql.Composable: ...

    def keeps(self, score: sql.Composable, cutoff: sql.Composable) -> sql.Composable: ...

    def sketch_check(self, sketch: sql.Composable) -> sql.Composable: ...
