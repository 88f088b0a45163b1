"""simdb's one exception hierarchy: every message says what was received and what to do."""

from __future__ import annotations


class SimdbError(Exception):
    """Base of every error simdb raises on purpose; the CLI prints it as one line."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class InvalidParameter(SimdbError):
    """A parameter is out of range or malformed (k, blocks, features, hex, names)."""


class InputError(SimdbError):
    """A document source cannot be read or parsed (file, JSONL line, CSV row)."""


class IndexNotFound(SimdbError):
    """The named index does not exist in the connected database."""


class IndexExists(SimdbError):
    """An index with that name already exists."""


class IndexMismatch(SimdbError):
    """The index was built with settings this request does not match."""


class SchemaMissing(SimdbError):
    """The database has no simdb schema, and the command only reads (it does not create one)."""


class PermissionDenied(SimdbError):
    """The connected role lacks a right the request needs; the message says which role has it."""


class SchemaNewer(SimdbError):
    """The database's simdb schema was migrated by a newer simdb than this one."""


class DatabaseUnavailable(SimdbError):
    """No PostgreSQL could be reached, or the embedded one could not start."""


def during_interrupt(error: BaseException) -> bool:
    """Whether `error` was raised while a Ctrl-C (KeyboardInterrupt) was being handled: psycopg's
    COPY, ending with the interrupt in the middle of a statement, can raise one of its own
    ("another command is already in progress") in place of the interrupt."""
    cause = error.__context__
    while cause is not None:
        if isinstance(cause, KeyboardInterrupt):
            return True
        cause = cause.__context__
    return False
