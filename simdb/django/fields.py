"""FingerprintField: a SimHash fingerprint, unsigned in Python, in a bigint (64 bits) or bit(128)
column, computed from a text field of the same model when the row is saved; its `near` lookup."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.lookups import Lookup
from django.db.models.sql.compiler import SQLCompiler

from simdb.django import keys
from simdb.errors import InvalidParameter
from simdb.modes.widths import Width, width
from simdb.simhash import SPEC_VERSION, Features, fingerprints


class FingerprintField(models.Field):
    """The SimHash of `source` (a text field's name; None: the application sets it), an unsigned
    int in Python; in PostgreSQL the bigint of the same bits (bits=64) or a bit(128). Text without
    words gives None.

    Django computes it in pre_save: save() and bulk_create(); QuerySet.update(), bulk_update()
    and raw SQL bypass it."""

    description = "SimHash fingerprint (unsigned in Python, bigint or bit(128) in PostgreSQL)"
    empty_strings_allowed = False

    def __init__(
        self,
        *args: Any,
        source: str | None = None,
        bits: int = 64,
        features: str = "word:3",
        fingerprint_spec: int = SPEC_VERSION,
        **kwargs: Any,
    ) -> None:
        self.width: Width = width(bits)  # InvalidParameter unless 64 or 128
        self.source = source
        self.bits = bits
        self.features = features
        self.parsed_features = Features.parse(features)
        self.fingerprint_spec = fingerprint_spec
        if source is not None:
            kwargs.setdefault("null", True)  # text without words has no fingerprint
            kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        if self.source is not None:
            kwargs["source"] = self.source
            if kwargs.get("null") is True:
                del kwargs["null"]
            else:
                kwargs["null"] = False
            if kwargs.get("editable") is False:
                del kwargs["editable"]
            else:
                kwargs["editable"] = True
        if self.bits != 64:
            kwargs["bits"] = self.bits
        if self.features != "word:3":
            kwargs["features"] = self.features
        # always: a migration records the spec its fingerprints were made under, so that a simdb
        # with a newer default shows up in makemigrations instead of mixing fingerprints silently
        kwargs["fingerprint_spec"] = self.fingerprint_spec
        return name, "simdb.django.FingerprintField", args, kwargs

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """Django's checks, and that `source` names a field of the model."""
        found: list[checks.CheckMessage] = super().check(**kwargs)
        if self.source is not None:
            try:
                self.model._meta.get_field(self.source)
            except FieldDoesNotExist:
                found.append(
                    checks.Error(
                        f"FingerprintField source {self.source!r} is not a field of {self.model.__name__}",
                        hint="name the text field to fingerprint, e.g. source='body'",
                        obj=self,
                        id="simdb.E001",
                    )
                )
        return found

    def get_internal_type(self) -> str:
        return "BigIntegerField" if self.bits == 64 else "FingerprintField"

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        return self.width.column_type

    def compute(self, text: Any) -> int | None:
        """The fingerprint of a source value (None for no text or text without words)."""
        if text is None or text == "":
            return None
        return fingerprints([text], self.parsed_features, self.fingerprint_spec, self.bits)[0]

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        if self.source is None:
            return super().pre_save(model_instance, add)
        value = self.compute(getattr(model_instance, self.source))
        setattr(model_instance, self.attname, value)
        return value

    def to_python(self, value: Any) -> int | None:
        """An unsigned fingerprint from an int (unsigned, or signed as PostgreSQL stores it) or hex."""
        if value is None:
            return None
        top: int = 2**self.bits
        try:
            if isinstance(value, str):
                return self.width.parse_hex(value)
            if isinstance(value, int) and not isinstance(value, bool) and -(top // 2) <= value < top:
                return int(value % top)
        except InvalidParameter as error:
            raise ValidationError(str(error), code="invalid") from error
        raise ValidationError(f"{value!r} is not a {self.bits}-bit fingerprint", code="invalid")

    def value_to_string(self, obj: models.Model) -> str:
        """Hex digits, as simdb prints a fingerprint (and to_python reads text back)."""
        value = self.value_from_object(obj)
        return "" if value is None else self.width.to_hex(value)

    def from_db_value(self, value: Any, expression: Any, connection: BaseDatabaseWrapper) -> int | None:
        return None if value is None else self.width.from_sql(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        if value is None or hasattr(value, "resolve_expression"):
            return value
        unsigned = self.to_python(value)
        return None if unsigned is None else keys.db_value(self.bits, unsigned)


def compute_fingerprints(objects: list[models.Model]) -> list[str]:
    """Set the fingerprints of these model instances from their sources, as save() would, and
    return the fields set: bulk_update() bypasses pre_save, so call
    Model.objects.bulk_update(objects, ["body", *compute_fingerprints(objects)])."""
    names: list[str] = []
    for instance in objects:
        for field in instance._meta.concrete_fields:
            if isinstance(field, FingerprintField) and field.source is not None:
                field.pre_save(instance, add=False)
                if field.name not in names:
                    names.append(field.name)
    return names


def near_index(field: FingerprintField) -> Any:
    """The SimhashIndex in the field's model's Meta.indexes on this field, or None."""
    from simdb.django.indexes import SimhashIndex

    model = getattr(field, "model", None)
    for index in getattr(getattr(model, "_meta", None), "indexes", []):
        if isinstance(index, SimhashIndex) and index.fields == [field.name]:
            return index
    return None


@FingerprintField.register_lookup
class Near(Lookup):
    """fingerprint__near=(fp, k): the rows within k bits of fp. Where the model's SimhashIndex on
    the field answers k (k <= its max_distance), each permuted table's key expression is compared
    to the same expression of fp (PostgreSQL ORs one bitmap scan of each B-tree), then bit_count
    verifies; otherwise bit_count alone, exact but over every row."""

    lookup_name = "near"
    prepare_rhs = False
    can_use_none_as_rhs = False

    def get_prep_lookup(self) -> Any:
        given = self.rhs
        if not (isinstance(given, tuple | list) and len(given) == 2):
            raise InvalidParameter(
                f"fingerprint__near={given!r} is not a pair", "give (fingerprint, max_distance), e.g. (fp, 3)"
            )
        fingerprint, k = given
        field = self.lhs.output_field
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= field.bits:
            raise InvalidParameter(
                f"max distance {k!r} is not 0..{field.bits}", "give a whole number of bits, e.g. 3"
            )
        unsigned = field.to_python(fingerprint)
        if unsigned is None:
            raise InvalidParameter("fingerprint__near with no fingerprint", "give a fingerprint (int or hex)")
        return unsigned, k

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        unsigned, k = self.rhs
        field = self.lhs.output_field
        verify = f"{keys.distance(field.bits, lhs, '%s')} <= %s"
        params: list[Any] = [*lhs_params, keys.db_value(field.bits, unsigned), k]
        index = near_index(field)
        if index is None or k > index.max_distance or lhs_params:
            return verify, params
        made = index.layout(field.bits)
        probes = " OR ".join(f"{row} = %s" for row in keys.btree_keys(made, lhs))  # each B-tree's key
        probe_params = [keys.probe(table, unsigned) for table in made.plan.tables]
        return f"(({probes}) AND {verify})", [*probe_params, *params]
