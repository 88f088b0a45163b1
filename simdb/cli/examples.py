"""One or two worked examples per command (and per subcommand, as "db start"), shown at the end of
its --help (tests parse each one)."""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "init": ("simdb init --dsn postgresql://me@db/app",),
    "create": (
        "simdb create docs",
        "simdb create papers --max-distance 4 --expected-rows 10000000",
        "simdb create near90 --mode jaccard --threshold 0.9",
    ),
    "distribute": ("simdb distribute docs --shards 8",),
    "attach": (
        "simdb attach arts --table public.articles --key-column id --text-column body",
        "simdb attach recent --table articles --key-column id --text-column body --where \"lang = 'en'\"",
    ),
    "sync": ("simdb sync arts", "simdb sync arts --watch", "simdb sync arts --full"),
    "status": ("simdb status arts", "simdb status arts --json"),
    "reindex": ("simdb reindex arts",),
    "plan": ("simdb plan --rows 100000000 -k 3", "simdb plan --rows 1000000000 --workers 32"),
    "list": ("simdb list", "simdb list --json"),
    "drop": ("simdb drop docs --yes",),
    "grant": ("simdb grant docs --reader webapp --writer loader",),
    "ingest": (
        "simdb ingest docs ./folder notes.jsonl table.csv --create",
        "simdb ingest docs export.csv --key-field id --text-field body --delimiter ';'",
        "cat records.jsonl | simdb ingest docs -",
        "simdb ingest docs ./folder --delete-missing",
    ),
    "load": (
        "simdb load big fingerprints.npy --key-prefix doc-",
        "simdb load docs exported.jsonl --key-field id --fingerprint-field fp",
    ),
    "delete": ("simdb delete docs /home/me/folder/old.txt",),
    "prune": ("simdb prune docs --older-than 30d",),
    "query": (
        "simdb query docs --file ./folder/report.txt",
        "simdb query docs --text 'some text' -k 2 --limit 10 --format csv",
    ),
    "pairs": ("simdb pairs docs -k 2 > pairs.csv", "simdb pairs docs --format jsonl | head"),
    "clusters": ("simdb clusters docs --json",),
    "dedup": ("simdb dedup docs --keep first --format jsonl",),
    "export": ("simdb export docs --format jsonl > docs.jsonl",),
    "fingerprint": (
        "simdb fingerprint --text 'some text'",
        "simdb fingerprint --file report.pdf --features bytes:4 --json",
    ),
    "calibrate": ("simdb calibrate ./folder --sample 5000 --threshold 0.9",),
    "bench": ("simdb bench --rows 1000000", "simdb bench --mode jaccard --padding-rows 1000000 --json"),
    "serve": ("simdb serve", "SIMDB_SERVE_TOKEN=secret simdb serve --host 0.0.0.0 --port 8080"),
    "db": ("simdb db status", "simdb db stop"),
    "db status": ("simdb db status", "simdb db status --json"),
    "db start": ("simdb db start", "SIMDB_HOME=/srv/simdb simdb db start"),
    "db stop": ("simdb db stop",),
    "db url": ("simdb db url", 'psql "$(simdb db url)"'),
}


def epilog(name: str) -> str | None:
    """The examples of command `name` as a --help epilog (kept as written: click's \\b)."""
    lines = EXAMPLES.get(name)
    if not lines:
        return None
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)
