"""Where an index's rows live, the storage axis: one module per kind behind one interface.

own     simdb's own table simdb."NAME" (`create` + `ingest`)
side    simdb's own table, following an application's table (`attach --text-column`; simdb.follow.side)
column  the application's own table: the B-trees on its fingerprint or signature column, and
        simdb."NAME" a view of it (`attach --fingerprint-column` / `--signature-column`)

Whatever the kind, simdb."NAME" is a relation of (key text, sketch, size, extension, ...) rows,
so that modes, queries, pairs and clusters read it alike and never ask where the rows live.
"""

from __future__ import annotations

from simdb.index.catalog import SourceRow
from simdb.index.storage.base import OWN, OwnTable, Storage
from simdb.index.storage.column import InTable
from simdb.index.storage.side import SideTable


def of(source: SourceRow | None) -> Storage:
    """The storage of an index from its catalog record of the table it reads (None: its own)."""
    if source is None:
        return OWN
    if source.sketch_column:
        return InTable(
            source.schema,
            source.table,
            source.key_column,
            source.sketch_column,
            source.text_column or None,
            source.condition,
        )
    return SideTable(source.schema, source.table, source.key_column, source.text_column)


__all__ = ["OWN", "InTable", "OwnTable", "SideTable", "Storage", "of"]
