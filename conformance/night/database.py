"""The night's example database (`fuzz --db`): a local folder, or a Redis server that every
worker of every machine shares (Hypothesis's own RedisExampleDatabase), so that a bug one
shard found is replayed first by all of them the next night.

A Redis server that goes away during a night must not end it nor lose what it finds: the
workers go on with a local folder (`Failover`), each says so in its folder
(`database-lost.json`), and summary.json reports it. Findings themselves never go through the
database: they are written to the report folder as they are met.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

LOST = "database-lost.json"  # in a worker's folder, once its Redis went away
TIMEOUT_S = 5.0  # a Redis that does not answer in this long is taken as gone


@dataclass(frozen=True)
class RedisUrl:
    """`redis://HOST:PORT/N` (or rediss://, unix://), as redis-py's from_url reads it."""

    url: str

    def __str__(self) -> str:
        return self.url

    def client(self):
        from redis import Redis

        return Redis.from_url(self.url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)


Where = Path | RedisUrl


def parse(text: str) -> Where:
    """--db's value: a URL of Redis's schemes, else a folder."""
    if text.split("://", 1)[0] in ("redis", "rediss", "unix") and "://" in text:
        return RedisUrl(text)
    return Path(text)


class Unreachable(Exception):
    """The database cannot be used at the start of a night (the CLI exits 2 with this line)."""


def check(where: Where) -> None:
    """Fail fast, in the parent, where the database cannot be used."""
    if isinstance(where, Path):
        if where.exists() and not where.is_dir():
            raise Unreachable(f"--db {where} is a file; the example database must be a folder")
        try:
            where.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Unreachable(f"--db {where} cannot be created ({exc.strerror or exc})") from None
        return
    try:
        import redis
    except ImportError:
        raise Unreachable("--db redis:// needs the redis package: pip install 'hypothesis[redis]'") from None
    try:
        where.client().ping()
    except (redis.RedisError, ValueError) as exc:
        raise Unreachable(f"--db {where}: Redis cannot be reached ({_one_line(exc)}); start it or give a folder") \
            from None


def open_database(where: Where | None, folder: Path) -> ExampleDatabase | None:
    """The database a worker's searches use; `folder`, the worker's own, holds the local one
    that takes over from a Redis that goes away."""
    if where is None:
        return None
    if isinstance(where, Path):
        return DirectoryBasedExampleDatabase(str(where))
    from hypothesis.extra.redis import RedisExampleDatabase

    return Failover(RedisExampleDatabase(where.client()), folder)


class Failover(ExampleDatabase):
    """Redis while it answers; from its first failure on, a local folder, for the rest of the
    night (a server that comes back may have lost what it had, and a night that flips between
    the two would replay neither well)."""

    def __init__(self, primary: ExampleDatabase, folder: Path):
        super().__init__()
        self.primary, self.folder = primary, folder
        self.local: ExampleDatabase | None = None

    def __repr__(self) -> str:
        return f"Failover({self.primary!r}, local={self.folder / 'database'})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Failover) and (self.primary, self.folder) == (other.primary, other.folder)

    def _use(self, do):
        import redis

        if self.local is None:
            try:
                return do(self.primary)
            except redis.RedisError as exc:
                self.lose(exc)
        return do(self.local)

    def lose(self, exc: Exception) -> None:
        from conformance.report.records import write_atomic

        self.local = DirectoryBasedExampleDatabase(str(self.folder / "database"))
        write_atomic(self.folder / LOST, json.dumps({"error": _one_line(exc), "local": str(self.folder / "database")}))

    def fetch(self, key: bytes):
        return self._use(lambda db: list(db.fetch(key)))  # a lazy fetch would fail outside _use

    def save(self, key: bytes, value: bytes) -> None:
        self._use(lambda db: db.save(key, value))

    def delete(self, key: bytes, value: bytes) -> None:
        self._use(lambda db: db.delete(key, value))

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._use(lambda db: db.move(src, dest, value))


def losses(findings: Path) -> list[dict]:
    """What the workers of a night wrote when their Redis went away (none: it never did)."""
    out = []
    for path in sorted(findings.glob(f"w*/{LOST}")):
        try:
            out.append({"worker": path.parent.name, **json.loads(path.read_text())})
        except (OSError, ValueError):
            out.append({"worker": path.parent.name, "error": "unreadable record"})
    return out


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__
