"""FingerprintField: a SimHash fingerprint, unsigned in Python, in a bigint (64 bits) or bit(128)
column; SignatureField: a MinHash signature in a bigint[] column; both computed from a text field
of the same model when the row is saved. Their `near` and `similar` lookups."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from django.core import checks
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.lookups import Lookup
from django.db.models.sql.compiler import SQLCompiler

from simdb.django import batch, keys, saving
from simdb.django.batch import Sourced
from simdb.errors import InvalidParameter
from simdb.index.modes.jaccard import JaccardIndex as JaccardLayout
from simdb.index.modes.widths import Width, width
from simdb.sketch.features import Features
from simdb.sketch.minhash import (
    COLUMN_SIGNATURE_SPEC,
    DEFAULT_PERMUTATIONS,
    DEFAULT_THRESHOLD,
    KEYED_SPEC,
    document_signatures,
)
from simdb.sketch.simhash import SPEC_VERSION, check_spec, fingerprints


class SourcedField(models.Field):
    """A field computed from `source` (a text field's name of the same model; None: the
    application sets it) in pre_save: save() (also with update_fields naming the source: the
    model's save_base adds the field) and bulk_create(); QuerySet.update(), bulk_update() and raw
    SQL bypass it. Subclasses say how (compute) and under which path they deconstruct."""

    path = ""

    def __init__(self, *args: Any, source: str | None = None, **kwargs: Any) -> None:
        self.source = source
        if source is not None:
            kwargs.setdefault("null", True)  # text without words has no value
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
        return name, self.path, args, kwargs

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """Django's checks, and that `source` names a field of the model."""
        found: list[checks.CheckMessage] = super().check(**kwargs)
        if self.source is not None:
            try:
                self.model._meta.get_field(self.source)
            except FieldDoesNotExist:
                kind, model = type(self).__name__, self.model.__name__
                found.append(
                    checks.Error(
                        f"{kind} source {self.source!r} is not a field of {model}",
                        hint="name the text field to compute it from, e.g. source='body'",
                        obj=self,
                        id="simdb.E001",
                    )
                )
        return found

    def contribute_to_class(self, cls: type[models.Model], name: str, private_only: bool = False) -> None:
        super().contribute_to_class(cls, name, private_only=private_only)
        if self.source is not None:
            saving.follow_sources(cls, sourced)

    def compute(self, text: Any) -> Any:
        """The value of one source value (None for no text or text without words)."""
        return self.compute_many([text])[0]

    def compute_many(self, texts: Sequence[Any]) -> list[Any]:
        """The values of these source values, in one call of simdb's sketching."""
        raise NotImplementedError

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        """The value to save, set on the instance: bulk_create's instances are sketched together
        (one call for the batch), a save()'s alone."""
        if self.source is None:
            return super().pre_save(model_instance, add)
        value = batch.value_of(self, model_instance, getattr(model_instance, self.source))
        setattr(model_instance, self.attname, value)
        return value


def sourced(model: type[models.Model]) -> list[Sourced]:
    """The model's fields computed from a source field."""
    return [f for f in model._meta.concrete_fields if isinstance(f, SourcedField) and f.source is not None]


class FingerprintField(SourcedField):
    """The SimHash of `source` (a text field's name; None: the application sets it), an unsigned
    int in Python; in PostgreSQL the bigint of the same bits (bits=64) or a bit(128). Text without
    words gives None.

    The default stays SimHash (spec 2, searched within 3 by SimhashIndex) so that an application's
    next makemigrations does not switch its column to another spec; fingerprint_spec=3 with
    SimhashIndex(max_distance=5) is simdb's default elsewhere, one-bit MinHash.

    Django computes it in pre_save: save() (update_fields naming the source write it too) and
    bulk_create(); QuerySet.update(), bulk_update() and raw SQL bypass it."""

    description = "SimHash fingerprint (unsigned in Python, bigint or bit(128) in PostgreSQL)"
    path = "simdb.django.FingerprintField"
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
        self.bits = bits
        self.features = features
        self.parsed_features = Features.parse(features)
        self.fingerprint_spec = check_spec(fingerprint_spec)  # InvalidParameter unless 1, 2 or 3
        super().__init__(*args, source=source, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        if self.bits != 64:
            kwargs["bits"] = self.bits
        if self.features != "word:3":
            kwargs["features"] = self.features
        # always: a migration records the spec its fingerprints were made under, so that a simdb
        # with a newer default shows up in makemigrations instead of mixing fingerprints silently
        kwargs["fingerprint_spec"] = self.fingerprint_spec
        return name, path, args, kwargs

    def get_internal_type(self) -> str:
        return "BigIntegerField" if self.bits == 64 else "FingerprintField"

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        return self.width.column_type

    def compute_many(self, texts: Sequence[Any]) -> list[int | None]:
        """The fingerprints of source values (None for no text or text without words)."""
        return _of_texts(
            texts, lambda given: fingerprints(given, self.parsed_features, self.fingerprint_spec, self.bits)
        )

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


class SignatureField(SourcedField):
    """The MinHash sketch of `source` as simdb's jaccard mode stores it (`permutations` values,
    then under signature spec v2 the check's 64 words): a list of unsigned ints in Python, the
    bigint[] of the same bits in PostgreSQL. Text without words gives None."""

    description = "MinHash signature (unsigned in Python, bigint[] in PostgreSQL)"
    path = "simdb.django.SignatureField"
    empty_strings_allowed = False

    def __init__(
        self,
        *args: Any,
        source: str | None = None,
        permutations: int = DEFAULT_PERMUTATIONS,
        features: str = "word:3",
        signature_spec: int = COLUMN_SIGNATURE_SPEC,
        **kwargs: Any,
    ) -> None:
        self.permutations = permutations
        self.features = features
        self.parsed_features = Features.parse(features)
        if signature_spec == KEYED_SPEC:
            raise InvalidParameter(
                f"signature spec {signature_spec} keys a sketch to one index's bands, not to a column",
                f"use signature_spec={COLUMN_SIGNATURE_SPEC} (the default) for a SignatureField",
            )
        self.signature_spec = signature_spec
        self.layout()  # refuses bad permutations or spec now
        super().__init__(*args, source=source, **kwargs)

    def layout(self) -> JaccardLayout:
        """simdb's jaccard index of this field's signatures (their length and conversions)."""
        return keys.jaccard_layout("signature", DEFAULT_THRESHOLD, self.permutations, self.signature_spec, 1)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        if self.permutations != DEFAULT_PERMUTATIONS:
            kwargs["permutations"] = self.permutations
        if self.features != "word:3":
            kwargs["features"] = self.features
        kwargs["signature_spec"] = self.signature_spec  # recorded always, as FingerprintField's spec
        return name, path, args, kwargs

    def get_internal_type(self) -> str:
        return "SignatureField"

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        return "bigint[]"

    def compute_many(self, texts: Sequence[Any]) -> list[list[int] | None]:
        """The signatures of source values (None for no text or text without words)."""

        def signatures(given: list[Any]) -> list[list[int] | None]:
            found = document_signatures(given, self.parsed_features, self.permutations, self.signature_spec)
            return [None if one is None else [int(v) for v in one] for one in found]

        return _of_texts(texts, signatures)

    def to_python(self, value: Any) -> list[int] | None:
        """Unsigned values from a list or array of ints (unsigned, or signed as PostgreSQL stores
        them) or text '{...}', of the field's length."""
        if value is None:
            return None
        try:
            return [
                int(v)
                for v in self.layout().parse_given(list(value) if not isinstance(value, str) else value)
            ]
        except (InvalidParameter, TypeError) as error:
            raise ValidationError(str(error), code="invalid") from error

    def value_to_string(self, obj: models.Model) -> str:
        """'{...}' as `simdb fingerprint --mode jaccard` prints it (and to_python reads back)."""
        value = self.value_from_object(obj)
        return "" if value is None else self.layout().spec.literal(value)

    def from_db_value(self, value: Any, expression: Any, connection: BaseDatabaseWrapper) -> list[int] | None:
        return None if value is None else [int(v) for v in self.layout().from_sql(value)]

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        if value is None or hasattr(value, "resolve_expression"):
            return value
        unsigned = self.to_python(value)
        return None if unsigned is None else self.layout().to_sql(np.asarray(unsigned, dtype=np.uint64))


def _of_texts(texts: Sequence[Any], compute: Callable[[list[Any]], list[Any]]) -> list[Any]:
    """compute() of the texts that are given (one call), None for None or ''."""
    given = [at for at, text in enumerate(texts) if text is not None and text != ""]
    found: list[Any] = [None] * len(texts)
    if given:
        for at, value in zip(given, compute([texts[at] for at in given]), strict=True):
            found[at] = value
    return found


def compute_fingerprints(objects: list[models.Model]) -> list[str]:
    """Set the fingerprints of these model instances from their sources, as save() would (one
    call per field), and return the fields set: bulk_update() bypasses pre_save, so call
    Model.objects.bulk_update(objects, ["body", *compute_fingerprints(objects)])."""
    names: list[str] = []
    fields: dict[SourcedField, list[models.Model]] = {}
    for instance in objects:
        for field in instance._meta.concrete_fields:
            if isinstance(field, SourcedField) and field.source is not None:
                fields.setdefault(field, []).append(instance)
                if field.name not in names:
                    names.append(field.name)
    for field, instances in fields.items():
        values = field.compute_many([getattr(instance, str(field.source)) for instance in instances])
        for instance, value in zip(instances, values, strict=True):
            setattr(instance, field.attname, value)
    return names


def model_index(field: models.Field, kind: type[models.Index]) -> Any:
    """The index of this kind (SimhashIndex, JaccardIndex) in the field's model's Meta.indexes on
    this field, or None."""
    model = getattr(field, "model", None)
    for index in getattr(getattr(model, "_meta", None), "indexes", []):
        if isinstance(index, kind) and index.fields == [field.name]:
            return index
    return None


class _BtreesLookup(Lookup):
    """field__lookup=(value, bound): the rows `verify` keeps; where the model's index answers
    (`probes` gives its B-trees' key expressions of the column and the value's keys), each key
    expression is first compared to the value's (PostgreSQL ORs one bitmap scan of each B-tree)."""

    prepare_rhs = False
    can_use_none_as_rhs = False
    usage = ""  # the pair it takes, for the hint

    def pair(self) -> tuple[Any, Any]:
        given = self.rhs
        if not (isinstance(given, tuple | list) and len(given) == 2):
            name = f"{self.lhs.output_field.name}__{self.lookup_name}"
            raise InvalidParameter(f"{name}={given!r} is not a pair", f"give {self.usage}")
        return given[0], given[1]

    def verify(self, lhs: str) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def probes(self, lhs: str) -> tuple[list[str], list[Any]] | None:
        raise NotImplementedError

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        verify, params = self.verify(lhs)
        found = None if lhs_params else self.probes(lhs)
        if found is None:
            return verify, [*lhs_params, *params]
        expressions, values = found
        probes = " OR ".join(f"{key} = %s" for key in expressions)  # each B-tree's key
        return f"(({probes}) AND {verify})", [*values, *params]


@FingerprintField.register_lookup
class Near(_BtreesLookup):
    """fingerprint__near=(fp, k): the rows within k bits of fp. Where the model has a SimhashIndex
    on the field, each permuted table's key expression is compared to the same expression of fp
    (PostgreSQL ORs one bitmap scan of each B-tree), then bit_count verifies; a k above the
    index's max_distance is refused. A field without one: bit_count alone, over every row."""

    lookup_name = "near"
    usage = "(fingerprint, max_distance), e.g. (fp, 3)"

    def get_prep_lookup(self) -> Any:
        fingerprint, k = self.pair()
        field = self.lhs.output_field
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= field.bits:
            raise InvalidParameter(
                f"max distance {k!r} is not 0..{field.bits}", "give a whole number of bits, e.g. 3"
            )
        unsigned = field.to_python(fingerprint)
        if unsigned is None:
            raise InvalidParameter("fingerprint__near with no fingerprint", "give a fingerprint (int or hex)")
        self.refuse_above_the_index(k)
        return unsigned, k

    def refuse_above_the_index(self, k: int) -> None:
        """A k the model's SimhashIndex does not answer would read every row: refuse it, as simdb's
        SQL and SQLAlchemy faces do, and say how to scan on purpose."""
        from simdb.django.indexes import SimhashIndex

        field = self.lhs.output_field
        index = model_index(field, SimhashIndex)
        if index is not None and k > index.max_distance:
            raise InvalidParameter(
                f"{field.name}__near with max distance {k}: SimhashIndex {index.name!r} answers up to"
                f" {index.max_distance} bits (above it the lookup would read every row)",
                f"give a distance from 0 to {index.max_distance}, create the index with"
                f" max_distance={k}, or scan on purpose: .alias(d=Hamming({field.name!r}, fp))"
                f".filter(d__lte={k})",
            )

    def verify(self, lhs: str) -> tuple[str, list[Any]]:
        unsigned, k = self.rhs
        bits = self.lhs.output_field.bits
        return f"{keys.distance(bits, lhs, '%s')} <= %s", [keys.db_value(bits, unsigned), k]

    def probes(self, lhs: str) -> tuple[list[str], list[Any]] | None:
        from simdb.django.indexes import SimhashIndex

        unsigned, k = self.rhs
        field = self.lhs.output_field
        index = model_index(field, SimhashIndex)
        if index is None or k > index.max_distance:
            return None
        shape = index.layout(field.bits)
        return keys.btree_keys(shape, lhs), [keys.probe(table, unsigned) for table in shape.plan.tables]


@SignatureField.register_lookup
class Similar(_BtreesLookup):
    """signature__similar=(sig, s): the rows whose estimated Jaccard similarity to sig is at least
    s. Where the model's JaccardIndex on the field answers s (s >= its threshold, the field's
    permutations and spec), each band's key expression is compared to sig's key (PostgreSQL ORs
    one bitmap scan of each B-tree), then simdb's estimate verifies: the rows sharing a band with
    sig, as simdb's jaccard index finds them; otherwise the estimate alone, over every row."""

    lookup_name = "similar"
    usage = "(signature, min_similarity), e.g. (sig, 0.8)"

    def get_prep_lookup(self) -> Any:
        signature, wanted = self.pair()
        if isinstance(wanted, bool) or not isinstance(wanted, int | float) or not 0 < wanted <= 1:
            raise InvalidParameter(
                f"min similarity {wanted!r} is not a Jaccard similarity", "give a value in (0, 1], e.g. 0.8"
            )
        unsigned = self.lhs.output_field.to_python(signature)
        if unsigned is None:
            raise InvalidParameter(
                "signature__similar with no signature", "give a signature (a list of ints)"
            )
        return np.asarray(unsigned, dtype=np.uint64), float(wanted)

    def verify(self, lhs: str) -> tuple[str, list[Any]]:
        signature, wanted = self.rhs
        index = self.lhs.output_field.layout()
        return f"{keys.estimate(index, lhs, '(%s::bigint[])')} >= %s", [index.to_sql(signature), wanted]

    def probes(self, lhs: str) -> tuple[list[str], list[Any]] | None:
        from simdb.django.indexes import JaccardIndex

        signature, wanted = self.rhs
        field = self.lhs.output_field
        index = model_index(field, JaccardIndex)
        if (
            index is None
            or wanted < index.threshold
            or (index.permutations, index.signature_spec) != (field.permutations, field.signature_spec)
        ):
            return None
        banded = index.layout()
        return keys.btree_keys(banded, lhs), keys.band_probes(banded, signature)
