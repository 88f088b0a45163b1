"""manage.py near_duplicates ID [--max-distance K]: the near-duplicates of an article."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from django_app.articles.models import Article, near_duplicates


class Command(BaseCommand):
    help = "List the articles within K bits of an article's fingerprint."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", type=int)
        parser.add_argument("--max-distance", type=int, default=3)

    def handle(self, *args: Any, **options: Any) -> None:
        article = Article.objects.get(pk=options["id"])
        for other in near_duplicates(article, options["max_distance"]):
            self.stdout.write(f"{other.pk}\t{other.distance}\t{other.title}")
