"""simdb.near as generated code: one static branch per simhash index, made again whenever an
index is created or dropped.

The hand-written simdb.near (now simdb_internal._near_dynamic) looks the index up in the catalog
and runs its statement through a dynamic EXECUTE, which PostgreSQL parses and plans on every call.
Each branch here holds the index's own near statement over simdb.near's parameters, planned once
per session (generically, as NAME__near's is), so that simdb.near costs no more than calling
the index's function. Anything a branch does not serve (an unknown index, a jaccard one, a
distance out of range, a fingerprint of the other width) goes to simdb_internal._near_dynamic,
which raises the usual errors. A distributed index's branch calls its near function instead, which
Citus plans on each call.
"""

from __future__ import annotations

from psycopg import sql

from simdb.db.connection import Connection
from simdb.index import catalog, names, placement, storage
from simdb.index.ddl import table_function
from simdb.index.modes.simhash import SimhashIndex
from simdb.index.modes.widths import WIDTHS

LOCK = "simdb.near dispatcher"  # concurrent creates and drops regenerate it one after the other
FALLBACK = names.internal("_near_dynamic")
FINGERPRINT, MAX_DISTANCE = sql.SQL("$2"), sql.SQL("$3")  # simdb.near's parameters after index_name


def _placement(conn: Connection, name: str) -> placement.Placement:
    """Where index NAME's rows are, as its storage says (an application's table may be distributed)."""
    return storage.of(catalog.source_row(conn, name)).placement(conn, name)


def regenerate(conn: Connection) -> None:
    """simdb.near(text, bigint, integer) and simdb.near(text, bit, integer) for the indexes in the
    catalog now (inside the caller's transaction)."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (LOCK,))
    limits = catalog.simhash_limits(conn)
    rows = {name: catalog.index_row(conn, name) for name, _, _ in limits}
    indexes = {name: SimhashIndex.from_catalog(conn, row) for name, row in rows.items() if row is not None}
    inline = {name: _placement(conn, name).inline_near for name in indexes}
    cutoff = sql.SQL("coalesce({}, {})")
    for bits, own in WIDTHS.items():
        length = own.length(FINGERPRINT)  # a branch takes fingerprints of the right length only
        fits = sql.SQL("true") if length is None else sql.SQL("{} = {}").format(length, sql.Literal(bits))
        branches = [
            sql.SQL(
                "WHEN {name} THEN"
                " IF {fits} AND (max_distance IS NULL OR max_distance BETWEEN 0 AND {k}) THEN"
                " RETURN QUERY {near}; RETURN;"
                " END IF;"
            ).format(
                name=sql.Literal(name),
                fits=fits,
                k=sql.Literal(k),
                near=indexes[name].near_statement(FINGERPRINT, cutoff.format(MAX_DISTANCE, sql.Literal(k)))
                if inline[name]
                else sql.SQL("SELECT * FROM {}({}, {})").format(
                    indexes[name].near_function, FINGERPRINT, cutoff.format(MAX_DISTANCE, sql.Literal(k))
                ),
            )
            if width == bits
            else sql.SQL(
                "WHEN {name} THEN RAISE EXCEPTION 'simdb: index % takes % fingerprints; this one is %',"
                " {quoted}, {wanted}, {given} USING ERRCODE = 'invalid_parameter_value',"
                " HINT = 'a 64-bit index takes a bigint (simdb.from_hex), a 128-bit one a bit(128)';"
            ).format(
                name=sql.Literal(name),
                quoted=sql.Literal(f"'{name}'"),
                wanted=sql.Literal(WIDTHS[width].column_type),
                given=sql.Literal(own.column_type),
            )
            for name, width, k in limits
        ]
        choose = (
            sql.SQL("CASE index_name {} ELSE NULL; END CASE;").format(sql.SQL(" ").join(branches))
            if branches
            else sql.SQL("")
        )
        conn.execute(
            table_function(
                names.in_schema("near"),
                f"index_name text, fingerprint {own.sketch_type}, max_distance integer DEFAULT NULL",
                "key text, distance integer",
                placement.Local.near_settings,
                sql.SQL("SELECT * FROM {}(index_name, fingerprint, max_distance)")
                .format(FALLBACK)
                .as_string(conn),
                choose.as_string(conn),
                replace=True,
            )
        )
