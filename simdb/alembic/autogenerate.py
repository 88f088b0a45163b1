"""Alembic autogenerate hooks: a generated migration that runs as generated.

In env.py, beside simdb.sqlalchemy's include_object:

    from simdb.alembic.autogenerate import process_revision_directives, render_item

    context.configure(..., include_object=include_object, render_item=render_item,
                      process_revision_directives=process_revision_directives)

render_item writes simdb's column types with their settings and the import they need;
process_revision_directives turns the B-trees that simhash_indexes / jaccard_indexes declare into
one simdb_ops.attach_index (and simdb_ops.drop_index in the downgrade), since B-trees that
op.create_index made are not a simdb index (attach_index refuses to build over them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from alembic.autogenerate import renderers
from alembic.autogenerate.api import AutogenContext
from alembic.migration import MigrationContext
from alembic.operations import ops
from sqlalchemy import MetaData

from simdb.errors import InvalidParameter
from simdb.index.modes import Index, JaccardIndex, SimhashIndex
from simdb.plan.planner import DEFAULT_EXPECTED_ROWS
from simdb.sketch.minhash import COLUMN_SIGNATURE_SPEC, DEFAULT_PERMUTATIONS
from simdb.sqlalchemy import Declared, Fingerprint, Fingerprint128, Signature

_OPS_IMPORT = "from simdb import alembic as simdb_ops"


def _arguments(pairs: Iterable[tuple[str, Any, Any]]) -> str:
    """name=value for each value that is not its default."""
    return ", ".join(f"{name}={value!r}" for name, value, default in pairs if value != default)


def render_item(type_: str, obj: Any, autogen_context: AutogenContext) -> str | bool:
    """For Alembic's `render_item`: Fingerprint, Fingerprint128 and Signature columns as
    simdb.sqlalchemy.Fingerprint(max_distance=3, blocks=4), with `import simdb.sqlalchemy`;
    anything else as Alembic renders it (False). Call it from your own render_item if you have one."""
    if type_ != "type":
        return False
    if isinstance(obj, Fingerprint | Fingerprint128):
        arguments = _arguments(
            [
                ("max_distance", obj.max_distance, None),
                ("blocks", obj.blocks, None),
                ("expected_rows", obj.expected_rows, DEFAULT_EXPECTED_ROWS),
            ]
        )
    elif isinstance(obj, Signature):
        arguments = _arguments(
            [
                ("threshold", obj.threshold, None),
                ("permutations", obj.permutations, DEFAULT_PERMUTATIONS),
                ("signature_spec", obj.signature_spec, COLUMN_SIGNATURE_SPEC),
            ]
        )
    else:
        return False
    autogen_context.imports.add("import simdb.sqlalchemy")
    return f"simdb.sqlalchemy.{type(obj).__name__}({arguments})"


def _spec(index: Index) -> tuple[str, str]:
    """The spec that builds `index` again, as Python source, and its class's name."""
    pairs: list[tuple[str, Any, Any]]
    if isinstance(index, SimhashIndex):
        plan = index.plan
        pairs = [
            ("max_distance", plan.max_distance, None),
            ("blocks", plan.blocks, None),
            ("bits", plan.bits, 64),
        ]
        return "SimhashSpec", f"SimhashSpec({_arguments(pairs)})"
    if isinstance(index, JaccardIndex):
        pairs = [
            ("threshold", index.threshold, None),
            ("permutations", index.permutations, None),
            ("signature_spec", index.signature_spec, None),
        ]
        return "JaccardSpec", f"JaccardSpec({_arguments(pairs)})"
    raise InvalidParameter(
        f"index {index.name!r} is of mode {index.mode}", "declare simhash or jaccard B-trees"
    )


class AttachIndexOp(ops.MigrateOperation):
    """simdb_ops.attach_index of an index in the application's own column."""

    def __init__(self, declared: Declared, table: str, key_column: str) -> None:
        self.declared, self.table, self.key_column = declared, table, key_column

    def reverse(self) -> DropIndexOp:
        return DropIndexOp(self.declared.name, self)

    def to_diff_tuple(self) -> tuple[Any, ...]:
        return ("simdb_attach_index", self.declared.name)


class DropIndexOp(ops.MigrateOperation):
    """simdb_ops.drop_index: the index's catalog rows, functions and B-trees."""

    def __init__(self, name: str, attached: AttachIndexOp | None = None) -> None:
        self.name, self.attached = name, attached

    def reverse(self) -> AttachIndexOp:
        if self.attached is None:
            raise InvalidParameter(f"no attach_index to undo drop_index({self.name!r})", "write it by hand")
        return self.attached

    def to_diff_tuple(self) -> tuple[Any, ...]:
        return ("simdb_drop_index", self.name)


@renderers.dispatch_for(AttachIndexOp)
def _render_attach(autogen_context: AutogenContext, op: AttachIndexOp) -> str:
    declared = op.declared
    spec_class, spec = _spec(declared.index)
    autogen_context.imports.add(_OPS_IMPORT)
    autogen_context.imports.add(f"from simdb.index.modes import {spec_class}")
    column = f"{declared.index.sketch_column}_column"
    rows = declared.index.expected_rows
    expected = f", expected_rows={rows!r}" if rows != DEFAULT_EXPECTED_ROWS else ""
    return (
        f"simdb_ops.attach_index({declared.name!r}, table={op.table!r}, key_column={op.key_column!r},"
        f" {column}={declared.column!r}, spec={spec}{expected})"
    )


@renderers.dispatch_for(DropIndexOp)
def _render_drop(autogen_context: AutogenContext, op: DropIndexOp) -> str:
    autogen_context.imports.add(_OPS_IMPORT)
    return f"simdb_ops.drop_index({op.name!r})"


@dataclass(frozen=True)
class _Btree:
    declared: Declared
    table: str
    key_column: str


def _declared_btrees(metadata: MetaData | list[MetaData] | None) -> dict[str, _Btree]:
    """Each B-tree name the MetaData declares through simhash_indexes / jaccard_indexes."""
    found: dict[str, _Btree] = {}
    for each in metadata if isinstance(metadata, list) else [metadata] if metadata is not None else []:
        for table in each.tables.values():
            for btree in table.indexes:
                declared = btree.info.get("simdb")
                if not isinstance(declared, Declared) or btree.name is None:
                    continue
                keys = list(table.primary_key.columns)
                if len(keys) != 1:
                    raise InvalidParameter(
                        f"table {table.fullname} of index {declared.name!r} has no one-column primary key",
                        "write simdb_ops.attach_index(..., key_column=...) in the migration by hand",
                    )
                name = f"{table.schema or 'public'}.{table.name}"
                found[str(btree.name)] = _Btree(declared, name, keys[0].name)
    return found


def _btree_of(op: Any, btrees: dict[str, _Btree]) -> _Btree | None:
    if not isinstance(op, ops.CreateIndexOp | ops.DropIndexOp):
        return None
    return btrees.get(str(op.index_name))


def _rewrite(container: Any, btrees: dict[str, _Btree]) -> None:
    """Replace, inside `container` and the op groups it holds, each index's B-tree ops by ops of
    the whole index, where its first B-tree's was: creates by attach_index, drops by drop_index;
    the same B-trees both dropped and created (an expression PostgreSQL prints otherwise than
    SQLAlchemy writes it) by nothing."""
    created: dict[str, set[str]] = defaultdict(set)
    dropped: dict[str, set[str]] = defaultdict(set)
    for op in container.ops:
        if hasattr(op, "ops"):
            _rewrite(op, btrees)
        btree = _btree_of(op, btrees)
        if btree is not None:
            index = created if isinstance(op, ops.CreateIndexOp) else dropped
            index[btree.declared.name].add(str(op.index_name))
    kept: list[Any] = []
    done: set[str] = set()
    for op in container.ops:
        btree = _btree_of(op, btrees)
        if btree is None:
            if not (hasattr(op, "ops") and not op.ops):
                kept.append(op)
            continue
        name = btree.declared.name
        if name in done or created[name] == dropped[name]:
            continue
        done.add(name)
        attach = AttachIndexOp(btree.declared, btree.table, btree.key_column)
        if dropped[name]:
            kept.append(DropIndexOp(name, attach))
        if created[name]:
            kept.append(attach)
    container.ops = kept


def process_revision_directives(context: MigrationContext, revision: Any, directives: list[Any]) -> None:
    """For Alembic's `process_revision_directives`: simdb's declared B-trees become
    simdb_ops.attach_index / drop_index of their index."""
    btrees = _declared_btrees(context.opts.get("target_metadata"))
    if not btrees:
        return
    for script in directives:
        for upgrade in script.upgrade_ops_list:
            _rewrite(upgrade, btrees)
        for downgrade in script.downgrade_ops_list:
            _rewrite(downgrade, btrees)
