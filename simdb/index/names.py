"""The one place that names simdb's schema and every object an index owns in it.

Index NAME owns the table simdb."NAME", its clusters table simdb."NAME__clusters", its kept texts
simdb."NAME__texts" (`ingest --keep-text`), one B-tree per
derived column, "NAME_<column>", and its functions simdb_internal."NAME__near", "NAME__pairs" and
"NAME__fresh_pairs".
An attached index with change capture also owns its queue simdb."NAME__queue", its status view
simdb."NAME__status", and its trigger functions simdb_internal."NAME__capture_<event>", called by
the triggers "simdb_NAME__<event>" on the source table (its notification channel: simdb_NAME).
An index laid out by prefix on Citus also owns its probe table simdb."NAME__probes". An index
that tracks changes (for `pairs --new`) has a column "changed" with its B-tree "NAME__changed",
kept by the trigger "simdb_changed" on its table.
Names never contain "__", so no two indexes can claim the same object. The schema simdb holds what
users query (tables, the catalog, the public functions); simdb_internal holds the functions those
call, so that psql's `\\df simdb.*` lists only the public ones (as TimescaleDB keeps its own in
_timescaledb_functions).
"""

from __future__ import annotations

import re

from psycopg import sql

from simdb.errors import InvalidParameter

SCHEMA = "simdb"
INTERNAL_SCHEMA = "simdb_internal"  # the functions behind the public ones (since revision 0011)
VERSION_TABLE = "_alembic_version"  # Alembic's record of the schema revision, in SCHEMA
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,39}")
RESERVED_SEPARATOR = "__"


def check_name(name: str) -> str:
    """Index names are plain lower-case identifiers, so SQL users never need to quote them."""
    if not NAME_PATTERN.fullmatch(name) or RESERVED_SEPARATOR in name:
        raise InvalidParameter(
            f"bad index name {name!r}",
            "use 1 to 40 characters: a lower-case letter, then letters, digits or single '_'",
        )
    return name


def in_schema(name: str) -> sql.Identifier:
    """simdb."<name>", quoted for psycopg.sql."""
    return sql.Identifier(SCHEMA, name)


def internal(name: str) -> sql.Identifier:
    """simdb_internal."<name>": a function the public ones call, not for users."""
    return sql.Identifier(INTERNAL_SCHEMA, name)


def table(index: str) -> sql.Identifier:
    """simdb."NAME": the index's rows."""
    return in_schema(index)


def near_function(index: str) -> sql.Identifier:
    """simdb_internal."NAME__near"(sketch, cutoff): the index's near query."""
    return internal(f"{index}__near")


def pairs_function(index: str) -> sql.Identifier:
    """simdb_internal."NAME__pairs"(cutoff): every pair within the cutoff."""
    return internal(f"{index}__pairs")


def fresh_pairs_function(index: str) -> sql.Identifier:
    """simdb_internal."NAME__fresh_pairs"(cutoff, mark): the pairs of the rows changed after a snapshot."""
    return internal(f"{index}__fresh_pairs")


def functions(index: str) -> list[sql.Identifier]:
    """The index's near and pairs functions, where this simdb makes them and where revisions
    before 0011 made them (in simdb), so that both can be dropped or replaced."""
    return [
        near_function(index),
        pairs_function(index),
        fresh_pairs_function(index),
        in_schema(f"{index}__near"),
        in_schema(f"{index}__pairs"),
    ]


def clusters_table(index: str) -> sql.Identifier:
    """simdb."NAME__clusters"(key, cluster, cutoff): written by `simdb clusters`."""
    return in_schema(f"{index}__clusters")


def clusters_table_name(index: str) -> str:
    """The clusters table's name as SQL users write it: simdb.NAME__clusters."""
    return qualified(f"{index}__clusters")


def probes_table(index: str) -> sql.Identifier:
    """simdb."NAME__probes"(tableno, prefix, key, sketch): an index laid out by prefix on Citus
    (placement.ByPrefix), each row once per permuted table or band."""
    return in_schema(f"{index}__probes")


def probes_table_name(index: str) -> str:
    """The probe table's name as SQL users write it: simdb.NAME__probes."""
    return qualified(f"{index}__probes")


def probes_primary_key_name(index: str) -> str:
    """The probe table's primary key constraint, on (prefix, tableno, key): NAME__probes_pkey."""
    return f"{index}__probes_pkey"


def old_rows_table(index: str) -> sql.Identifier:
    """The session's temporary table of the rows a write replaces or removes (key, sketch), whose
    probe entries it then removes (placement.ByPrefix)."""
    return sql.Identifier(f"_simdb_old_{index}")


def texts_table(index: str) -> sql.Identifier:
    """simdb."NAME__texts"(key, body): the documents' texts, compressed, where `ingest --keep-text`
    kept them (for people to read them: `simdb serve`)."""
    return in_schema(f"{index}__texts")


def texts_table_name(index: str) -> str:
    """The texts table's name as SQL users write it: simdb.NAME__texts."""
    return qualified(f"{index}__texts")


def qualified(name: str) -> str:
    """simdb.<name> as text, for messages and regclass arguments (index names need no quotes)."""
    return f"{SCHEMA}.{name}"


def btree(index: str, column: str) -> sql.Identifier:
    """The B-tree on one derived column (p0, b3, ...): NAME_<column>, in the index's schema."""
    return in_schema(btree_name(index, column))


def btree_name(index: str, column: str) -> str:
    """The unqualified name of that B-tree (CREATE INDEX takes no schema)."""
    return f"{index}_{column}"


CHANGED_COLUMN = "changed"  # the id of the transaction that last changed a row's sketch
CHANGED_TRIGGER = "simdb_changed"  # on simdb."NAME": sets CHANGED_COLUMN when an UPDATE changes the sketch


def changed_btree_name(index: str) -> str:
    """The B-tree on CHANGED_COLUMN of an index that tracks changes: NAME__changed."""
    return f"{index}__changed"


def primary_key_name(index: str) -> str:
    """The index table's primary key constraint (on key): NAME__pkey."""
    return f"{index}__pkey"


def stage_table(mode: str, size: int, index: str) -> sql.Identifier:
    """The session's temporary staging table for writes to an index (COPY, then upsert), named by
    the shape of its sketches too (mode and bits or values), so that an index dropped and made
    again with other sketches, by any session, never meets a stale one."""
    return sql.Identifier(f"_simdb_{mode}{size}_{index}")


def app_btree_name(index: str, column: str) -> str:
    """A B-tree simdb puts on the application's table (an index in its own column): simdb_NAME_<column>,
    in that table's schema, so that its name says whose it is."""
    return f"simdb_{index}_{column}"


def app_trigger_name(index: str, what: str) -> str:
    """A trigger simdb puts on the application's table: simdb_NAME_<what>."""
    return f"simdb_{index}_{what}"


def clear_function(index: str) -> sql.Identifier:
    """simdb_internal."NAME__clear"(): the trigger that clears a sketch whose text changed."""
    return internal(f"{index}__clear")


def claim_function(index: str) -> sql.Identifier:
    """simdb_internal."NAME__claim"(): the trigger that marks a sketch the same write set, for the
    clearing one to keep."""
    return internal(f"{index}__claim")


def claim_setting(index: str) -> str:
    """The transaction's setting by which the claiming trigger tells the clearing one (simdb.NAME's
    own, so that two indexes on one table never read each other's)."""
    return f"simdb.claimed_{index}"


def wake_function(index: str) -> sql.Identifier:
    """simdb_internal."NAME__wake"(): the trigger that wakes `simdb sync --watch` (NOTIFY)."""
    return internal(f"{index}__wake")


def fill_stage_table(mode: str, size: int, index: str) -> sql.Identifier:
    """The session's temporary table of sketches to write into an application's table (as
    stage_table, by the sketches' shape)."""
    return sql.Identifier(f"_simdb_fill_{mode}{size}_{index}")


CAPTURE_EVENTS = ("insert", "update", "delete", "truncate")  # one trigger (and function) each


def queue_table(index: str) -> sql.Identifier:
    """simdb."NAME__queue"(key, queued_at, attempts, last_error, failed_at): the source keys the
    capture triggers recorded as changed, until a sync applies them."""
    return in_schema(f"{index}__queue")


def inbox_table(index: str) -> sql.Identifier:
    """simdb."NAME__inbox"(source_key, key, queued_at): on Citus, where the capture triggers of a
    distributed table write, on the shards beside the table's (distributed by the same key and
    co-located with it); each sync moves its rows into the queue first."""
    return in_schema(f"{index}__inbox")


def queue_table_name(index: str) -> str:
    """The queue's name as SQL users write it: simdb.NAME__queue."""
    return qualified(f"{index}__queue")


def queue_btree_name(index: str, column: str) -> str:
    """The unqualified name of a B-tree on the queue: NAME__queue_<column>."""
    return f"{index}__queue_{column}"


def status_view(index: str) -> sql.Identifier:
    """simdb."NAME__status": one row saying how far the index lags behind its source table."""
    return in_schema(f"{index}__status")


def capture_function(index: str, event: str) -> sql.Identifier:
    """simdb_internal."NAME__capture_<event>"(): the trigger function recording one kind of change."""
    return internal(f"{index}__capture_{event}")


def capture_trigger(index: str, event: str) -> sql.Identifier:
    """The trigger on the source table, named to say it is simdb's: simdb_NAME__<event>."""
    return sql.Identifier(f"simdb_{index}__{event}")


def channel(index: str) -> sql.Identifier:
    """The NOTIFY channel that wakes `sync --watch` of index NAME (its capture triggers, or those
    of an index in the application's table): simdb_NAME."""
    return sql.Identifier(f"simdb_{index}")


def capture_objects(index: str) -> list[sql.Composed]:
    """DROP statements for an attached index's change capture, whether it exists or not.

    The trigger functions go with CASCADE, which drops the triggers that call them (on the
    source table, wherever it is now) and nothing else: no other object can depend on them."""
    return [
        sql.SQL("DROP VIEW IF EXISTS {}").format(status_view(index)),
        *(
            sql.SQL("DROP FUNCTION IF EXISTS {}() CASCADE").format(capture_function(index, event))
            for event in CAPTURE_EVENTS
        ),
        sql.SQL("DROP TABLE IF EXISTS {}").format(queue_table(index)),
        sql.SQL("DROP TABLE IF EXISTS {}").format(inbox_table(index)),
    ]


def owned_objects(index: str) -> list[sql.Composed]:
    """DROP statements for everything an index owns in simdb's schemas, whether it exists or not
    (after its storage dropped what it has elsewhere: storage.Storage.drop_statements)."""
    return [
        *capture_objects(index),
        sql.SQL("DROP TABLE IF EXISTS {}").format(table(index)),
        sql.SQL("DROP TABLE IF EXISTS {}").format(clusters_table(index)),
        sql.SQL("DROP TABLE IF EXISTS {}").format(probes_table(index)),
        sql.SQL("DROP TABLE IF EXISTS {}").format(texts_table(index)),
        *(sql.SQL("DROP FUNCTION IF EXISTS {}").format(function) for function in functions(index)),
        *(  # (CASCADE: their triggers, on the application's table under whatever name it has now)
            sql.SQL("DROP FUNCTION IF EXISTS {}() CASCADE").format(function)
            for function in (clear_function(index), claim_function(index), wake_function(index))
        ),
    ]
