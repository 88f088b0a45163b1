"""The latency of the example project's `near` lookup against the same statement in plain psycopg,
in one run: `python tests/django_app/latency.py [ROWS]` with SIMDB_DJANGO_DSN naming an
empty database that it fills (migrate, then ROWS articles, 30,000 by default)."""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_app.settings")

import django

django.setup()

import psycopg  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from django_app.articles.models import Article, near_ids, near_sql  # noqa: E402


def main(rows: int = 30_000, queries: int = 500, rounds: int = 3) -> None:
    call_command("migrate", verbosity=0)
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    bases = [" ".join(rng.choices(words, k=80)) for _ in range(rows // 3)]
    texts = [base if i % 3 == 0 else base + f" edit{i}" for i, base in enumerate(bases * 3)][:rows]
    Article.objects.bulk_create(
        [Article(title=str(i), body=text) for i, text in enumerate(texts)], batch_size=2000
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE articles_article")
    probes = [fp for fp in Article.objects.values_list("fingerprint", flat=True)[:queries] if fp is not None]
    dsn = os.environ.get("SIMDB_DJANGO_DSN", "postgresql://postgres@127.0.0.1:5432/articles")
    statements = [near_sql(fp) for fp in probes]  # (made once, outside the timing)
    best: dict[str, float] = {}
    with psycopg.connect(dsn, autocommit=True) as plain:
        for _ in range(rounds):
            for kind in ("django", "plain"):
                times = []
                for fp, (statement, params) in zip(probes, statements, strict=True):
                    began = time.perf_counter()
                    if kind == "django":
                        found = near_ids(fp)
                    else:
                        found = [row[0] for row in plain.execute(statement, params, prepare=True)]
                    times.append((time.perf_counter() - began) * 1000)
                    assert found
                best[kind] = min(best.get(kind, float("inf")), statistics.median(times))
    ratio = best["django"] / best["plain"]
    print(
        f"{rows} articles, {len(probes)} near lookups within 3 bits, best p50 of {rounds} rounds: Django ORM"
        f" {best['django']:.3f} ms, the same statement in plain psycopg (prepared) {best['plain']:.3f} ms (x{ratio:.2f})"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30_000)
