"""FingerprintField: a 64-bit SimHash fingerprint in a bigint column, unsigned in Python, computed
from a text field of the same model when the row is saved; and its `near` lookup."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.lookups import Lookup
from django.db.models.sql.compiler import SQLCompiler

from simdb import bits
from simdb.django import keys
from simdb.errors import InvalidParameter
from simdb.simhash import SPEC_VERSION, Features, fingerprints

SUPPORTED_BITS = (64,)


class FingerprintField(models.Field):
    """The SimHash of `source` (a text field's name; None: the application sets it), an unsigned
    int in Python and the bigint of the same bits in PostgreSQL. Text without words gives None.

    Django computes it in pre_save: save() and bulk_create(); QuerySet.update(), bulk_update()
    and raw SQL bypass it."""

    description = "SimHash fingerprint (unsigned in Python, bigint in PostgreSQL)"
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
        if bits not in SUPPORTED_BITS:
            raise InvalidParameter(
                f"FingerprintField(bits={bits!r}) is not supported",
                "use bits=64 (128-bit fingerprints are not in simdb.django yet)",
            )
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
        if self.fingerprint_spec != SPEC_VERSION:
            kwargs["fingerprint_spec"] = self.fingerprint_spec
        return name, "simdb.django.FingerprintField", args, kwargs

    def get_internal_type(self) -> str:
        return "BigIntegerField"

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        return "bigint"

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
        """An unsigned fingerprint from an int (signed or unsigned) or hex digits."""
        if value is None:
            return None
        try:
            if isinstance(value, str):
                return bits.parse_hex(value, self.bits)
            if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**64:
                return bits.to_unsigned(value)
        except InvalidParameter as error:
            raise ValidationError(str(error), code="invalid") from error
        raise ValidationError(f"{value!r} is not a 64-bit fingerprint", code="invalid")

    def from_db_value(self, value: Any, expression: Any, connection: BaseDatabaseWrapper) -> int | None:
        return None if value is None else bits.to_unsigned(int(value))

    def get_prep_value(self, value: Any) -> int | None:
        value = super().get_prep_value(value)
        if value is None or hasattr(value, "resolve_expression"):
            return value  # type: ignore[no-any-return]
        unsigned = self.to_python(value)
        return None if unsigned is None else bits.to_signed(unsigned)


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
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= 64:
            raise InvalidParameter(f"max distance {k!r} is not 0..64", "give a whole number of bits, e.g. 3")
        field = self.lhs.output_field
        unsigned = field.to_python(fingerprint)
        if unsigned is None:
            raise InvalidParameter("fingerprint__near with no fingerprint", "give a fingerprint (int or hex)")
        return bits.to_signed(unsigned), k

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        signed, k = self.rhs
        field = self.lhs.output_field
        verify = f"{keys.distance(field.bits, lhs, '%s')} <= %s"
        params: list[Any] = [*lhs_params, signed, k]
        index = near_index(field)
        if index is None or k > index.max_distance or lhs_params:
            return verify, params
        made = index.layout(field.bits)
        unsigned = bits.to_unsigned(signed)
        rows = keys.btree_keys(made, lhs)
        probes = " OR ".join(f"{row} = %s" for row in rows)  # each B-tree's key of the row
        probe_params = [bits.to_signed(table.prefix(unsigned)) for table in made.plan.tables]
        return f"(({probes}) AND {verify})", [*probe_params, *params]
