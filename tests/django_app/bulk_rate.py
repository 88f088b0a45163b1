"""bulk_create's rate with and without a FingerprintField, in one run: `python
tests/django_app/bulk_rate.py [ROWS] [ROUNDS]` with SIMDB_DJANGO_DSN naming an empty database
(it migrates it). Each round inserts the same ROWS articles (80 words each) into the article
table three ways, one after the other: through Article (the field sketches the batch in one
call), through a model whose field sketches each row in its own call (as pre_save once did),
and through a model without the field; the best round of each is printed in rows per second."""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_app.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, models  # noqa: E402

from django_app.articles.models import Article  # noqa: E402
from simdb.django import FingerprintField  # noqa: E402


class RowByRow(FingerprintField):
    """A FingerprintField that sketches in pre_save, a row at a time."""

    def pre_save(self, model_instance: models.Model, add: bool) -> object:
        value = self.compute(model_instance.body)
        setattr(model_instance, self.attname, value)
        return value


class Unbatched(models.Model):
    """Article with the field computed a row at a time."""

    title = models.CharField(max_length=200)
    body = models.TextField()
    fingerprint = RowByRow(source="body")

    class Meta:
        app_label = "articles"
        db_table = "articles_article"
        managed = False


class Plain(models.Model):
    """Article's table without the fingerprint (left NULL): bulk_create without the field."""

    title = models.CharField(max_length=200)
    body = models.TextField()

    class Meta:
        app_label = "articles"
        db_table = "articles_article"
        managed = False


def main(rows: int = 4000, rounds: int = 5) -> None:
    call_command("migrate", verbosity=0)
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    texts = [" ".join(rng.choices(words, k=80)) for _ in range(rows)]
    best: dict[str, float] = {}
    for _ in range(rounds):
        for kind, model in (("batched", Article), ("row by row", Unbatched), ("without", Plain)):
            with connection.cursor() as cursor:
                cursor.execute("TRUNCATE articles_article")
            objects = [model(title=str(i), body=text) for i, text in enumerate(texts)]
            began = time.perf_counter()
            model.objects.bulk_create(objects)
            best[kind] = max(best.get(kind, 0.0), rows / (time.perf_counter() - began))
    print(
        f"bulk_create of {rows} articles, best of {rounds} rounds, rows/s: FingerprintField batched"
        f" {best['batched']:,.0f}, row by row {best['row by row']:,.0f}, without the field"
        f" {best['without']:,.0f}"
    )


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
