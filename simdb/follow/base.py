"""What every way of following a table provides (Follower), and what it reports: a sync's
counts (Synced) and how far an index is behind its table (Status)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from simdb.db.connection import Connection
    from simdb.index.modes import Index

TRIGGERS = "triggers"  # the catalog's capture of a side table whose triggers queue its changes (else "none")
IN_TABLE = "column"  # what `simdb status` says of an index in the application's own column

Progress = Callable[[int], object] | None  # told the rows done, as a sync goes


class Synced(Protocol):
    """What one sync did, as `simdb sync` shows it."""

    @property
    def changed(self) -> bool: ...

    def lines(self) -> list[str]: ...

    def as_dict(self) -> dict[str, object]: ...


@dataclass(frozen=True)
class Status:
    """How far attached index NAME is behind its table: what `simdb status NAME` shows."""

    name: str
    table: str
    capture: str
    synced_at: datetime | None
    pending: int | None = None  # queued rows (None without triggers)
    failed: int | None = None  # queued rows that failed at least once
    oldest_pending_age: timedelta | None = None
    failures: list[tuple[str, int, str]] = field(default_factory=list)  # (key, attempts, last error)
    unchecked: int = 0  # in the application's column: sketches from before the attach, not checked yet
    wordless: int | None = None  # in an application's column: rows whose text has no words

    def as_dict(self) -> dict[str, object]:
        age = self.oldest_pending_age
        shown: dict[str, object] = {
            "name": self.name,
            "table": self.table,
            "capture": self.capture,
            "synced_at": None if self.synced_at is None else self.synced_at.isoformat(),
            "pending": self.pending,
            "failed": self.failed,
            "oldest_pending_seconds": None if age is None else round(age.total_seconds(), 3),
            "failures": [{"key": key, "attempts": n, "error": error} for key, n, error in self.failures],
            **({} if self.wordless is None else {"wordless": self.wordless}),
        }
        if self.capture == IN_TABLE and self.pending is not None:  # (of pending: sketches to check)
            shown["unchecked"] = self.unchecked
        return shown

    def lines(self) -> list[str]:
        synced = "never" if self.synced_at is None else self.synced_at.isoformat(timespec="seconds")
        if self.capture == IN_TABLE:
            if self.pending is None:
                return [
                    f"index {self.name} lives in {self.table}, which the application writes: each"
                    " write is searchable in its own transaction (nothing to sync)"
                ]
            waiting = (
                f"{self.pending - self.unchecked} rows with text have none yet, and {self.unchecked}"
                " sketches it held when attached are not checked against their text yet"
                f" (`simdb sync {self.name}` fills and checks them)"
                if self.unchecked
                else f"{self.pending} rows with text have none yet (`simdb sync {self.name}` fills them)"
            )
            return [
                f"index {self.name} lives in {self.table}: {waiting}, {self.wordless} whose text has no"
                f" words stay without one (as the last sync found them); last synced {synced}"
            ]
        if self.capture != TRIGGERS:
            return [
                f"index {self.name} follows {self.table} without triggers: each sync compares the"
                f" whole table; last synced {synced}"
            ]
        age = self.oldest_pending_age
        oldest = "" if age is None else f", the oldest queued {age.total_seconds():.1f} s ago"
        lines = [
            f"index {self.name} follows {self.table} with triggers: {self.pending} rows queued"
            f"{oldest}, {self.failed} failed; last synced {synced}"
        ]
        lines += [f"  failed: key {key!r} ({n} attempts): {error}" for key, n, error in self.failures]
        return lines


class Follower(Protocol):
    """How the indexes of one storage kind follow their table."""

    def sync(self, conn: Connection, index: Index, progress: Progress, *, full: bool, jobs: int) -> Synced:
        """Bring the index up to date (`full`: every row again, a repair)."""
        ...

    def reindex(self, conn: Connection, index: Index, target: Index, progress: Progress, *, jobs: int) -> int:
        """Sketch every row again under `target`'s spec; the rows moved."""
        ...

    def status(self, conn: Connection, index: Index) -> Status:
        """How far the index is behind its table."""
        ...

    def notifies(self, conn: Connection, name: str) -> bool:
        """Whether a change to the table NOTIFYs the index's channel (else a watch polls)."""
        ...
