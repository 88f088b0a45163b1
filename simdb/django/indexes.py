"""SimhashIndex and JaccardIndex: simdb's B-trees (one per permuted table, or per LSH band) on a
FingerprintField or SignatureField, for Meta.indexes, so that makemigrations writes them and
migrate builds them in the migration's transaction (or, with AddIndexConcurrently in a
non-atomic migration, one CREATE INDEX CONCURRENTLY at a time)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.backends.ddl_references import Reference, Statement

from simdb.django import keys
from simdb.errors import InvalidParameter
from simdb.index.modes.jaccard import JaccardIndex as JaccardLayout
from simdb.index.modes.simhash import SimhashIndex as Layout
from simdb.sketch.minhash import COLUMN_SIGNATURE_SPEC, DEFAULT_PERMUTATIONS, DEFAULT_THRESHOLD

DEFAULT_EXPECTED_ROWS = 1_000_000


class _Btrees(Reference):
    """CREATE (or DROP) INDEX of each permuted table's B-tree, rendered when executed, so that a
    table or column renamed before then (deferred SQL) is followed."""

    def __init__(self, statements: Any, table: str, column: str) -> None:
        self.statements, self.table, self.column = statements, table, column

    def references_table(self, table: str) -> bool:
        return table == self.table

    def references_column(self, table: str, column: str) -> bool:
        return table == self.table and column == self.column

    def rename_table_references(self, old_table: str, new_table: str) -> None:
        if self.table == old_table:
            self.table = new_table

    def rename_column_references(self, table: str, old_column: str, new_column: str) -> None:
        if self.table == table and self.column == old_column:
            self.column = new_column

    def __str__(self) -> str:
        return "; ".join(self.statements(self.table, self.column))


class _BtreesIndex(models.Index):
    """Several B-trees on expressions of one field, named NAME_<column> after the columns of
    simdb's own index object (layout_of), created and dropped together."""

    kind = "simdb"

    def _field_name(self, fields: list[str], example: str) -> None:
        if len(fields) != 1 or fields[0].startswith("-"):
            raise InvalidParameter(
                f"{self.kind}(fields={fields!r}) needs one field",
                f"name the field, e.g. fields=[{example!r}]",
            )

    def layout_of(self, model: type[models.Model]) -> Layout | JaccardLayout:
        raise NotImplementedError

    def create_sql(
        self,
        model: type[models.Model],
        schema_editor: BaseDatabaseSchemaEditor,
        using: str = "",
        **kwargs: Any,
    ) -> Statement:
        index, quote = self.layout_of(model), schema_editor.quote_name
        names = [f"{self.name}_{key}" for key in index.columns]
        create = "CREATE INDEX CONCURRENTLY" if kwargs.get("concurrently") else "CREATE INDEX"

        def statement(number: int) -> Callable[[str, str], str]:
            def render(table: str, column: str) -> str:
                key = keys.btree_keys(index, quote(column))[number]
                return f"{create} {quote(names[number])} ON {quote(table)} (({key}))"

            return render

        return self._statements(model, schema_editor, [statement(n) for n in range(len(names))], **kwargs)

    def remove_sql(
        self, model: type[models.Model], schema_editor: BaseDatabaseSchemaEditor, **kwargs: Any
    ) -> Statement:
        quote = schema_editor.quote_name
        drop = "DROP INDEX CONCURRENTLY IF EXISTS" if kwargs.get("concurrently") else "DROP INDEX IF EXISTS"

        def statement(name: str) -> Callable[[str, str], str]:
            return lambda table, column: f"{drop} {quote(name)}"

        names = [f"{self.name}_{key}" for key in self.layout_of(model).columns]
        return self._statements(model, schema_editor, [statement(name) for name in names], **kwargs)

    def _statements(
        self,
        model: type[models.Model],
        schema_editor: BaseDatabaseSchemaEditor,
        renders: list[Callable[[str, str], str]],
        **kwargs: Any,
    ) -> Statement:
        """One statement of every B-tree's (rendered when executed). CONCURRENTLY (Django's
        AddIndexConcurrently and RemoveIndexConcurrently, in a non-atomic migration) cannot be one
        string of several statements (PostgreSQL runs those in one transaction): the first B-tree's
        is returned, the others' join the schema editor's deferred SQL, each executed on its own
        when the migration's operations are done."""
        table, column = model._meta.db_table, model._meta.get_field(self.fields[0]).column

        def btrees(chosen: list[Callable[[str, str], str]]) -> Statement:
            joined = _Btrees(lambda t, c: [render(t, c) for render in chosen], table, column)
            return Statement("%(btrees)s", btrees=joined)

        if not kwargs.get("concurrently"):
            return btrees(renders)
        schema_editor.deferred_sql.extend(btrees([render]) for render in renders[1:])
        return btrees(renders[:1])


class SimhashIndex(_BtreesIndex):
    """The B-trees of simdb's simhash index on one FingerprintField: exact `near` lookups within
    max_distance bits. `blocks` overrides the planner, which plans for `expected_rows`. Table i's
    B-tree is named NAME_p<i>."""

    kind = "SimhashIndex"

    def __init__(
        self,
        *,
        fields: list[str],
        name: str,
        max_distance: int = 3,
        blocks: int | None = None,
        expected_rows: int = DEFAULT_EXPECTED_ROWS,
    ) -> None:
        self._field_name(fields, "fingerprint")
        self.max_distance, self.blocks, self.expected_rows = max_distance, blocks, expected_rows
        super().__init__(fields=fields, name=name)
        self.layout(64)  # refuse a bad max_distance or blocks now, not at migrate

    def deconstruct(self) -> Any:
        kwargs: dict[str, Any] = {"fields": self.fields, "name": self.name, "max_distance": self.max_distance}
        if self.blocks is not None:
            kwargs["blocks"] = self.blocks
        if self.expected_rows != DEFAULT_EXPECTED_ROWS:
            kwargs["expected_rows"] = self.expected_rows
        return "simdb.django.SimhashIndex", (), kwargs

    def layout(self, bits: int) -> Layout:
        """simdb's simhash index of these settings (its tables and key expressions)."""
        return keys.layout(self.name, self.max_distance, self.blocks, self.expected_rows, bits)

    def layout_of(self, model: type[models.Model]) -> Layout:
        return self.layout(self._bits(model))

    def btree_names(self, bits: int = 64) -> list[str]:
        return [f"{self.name}_{column}" for column in self.layout(bits).columns]

    def _bits(self, model: type[models.Model]) -> int:
        return int(getattr(model._meta.get_field(self.fields[0]), "bits", 64))


class JaccardIndex(_BtreesIndex):
    """The B-trees of simdb's jaccard index on one SignatureField, one per LSH band chosen for
    `threshold` and `permutations` (the field's): `similar` lookups at or above threshold. Band
    i's B-tree is named NAME_b<i>."""

    kind = "JaccardIndex"

    def __init__(
        self,
        *,
        fields: list[str],
        name: str,
        threshold: float = DEFAULT_THRESHOLD,
        permutations: int = DEFAULT_PERMUTATIONS,
        signature_spec: int = COLUMN_SIGNATURE_SPEC,
    ) -> None:
        self._field_name(fields, "signature")
        self.threshold, self.permutations, self.signature_spec = threshold, permutations, signature_spec
        super().__init__(fields=fields, name=name)
        self.layout()  # refuse a bad threshold or permutations now, not at migrate

    def deconstruct(self) -> Any:
        kwargs: dict[str, Any] = {"fields": self.fields, "name": self.name, "threshold": self.threshold}
        if self.permutations != DEFAULT_PERMUTATIONS:
            kwargs["permutations"] = self.permutations
        kwargs["signature_spec"] = self.signature_spec  # as FingerprintField records its spec
        return "simdb.django.JaccardIndex", (), kwargs

    def layout(self) -> JaccardLayout:
        """simdb's jaccard index of these settings (its bands and key expressions)."""
        return keys.jaccard_layout(
            self.name, self.threshold, self.permutations, self.signature_spec, DEFAULT_EXPECTED_ROWS
        )

    def layout_of(self, model: type[models.Model]) -> JaccardLayout:
        return self.layout()

    def btree_names(self) -> list[str]:
        return [f"{self.name}_{column}" for column in self.layout().columns]
