"""Articles whose bodies are fingerprinted on save and searched for near-duplicates."""

from __future__ import annotations

from django.db import models

from simdb.django import (
    FingerprintField,
    Hamming,
    JaccardEstimate,
    JaccardIndex,
    SignatureField,
    SimhashIndex,
)


class Article(models.Model):
    title = models.CharField(max_length=200)
    body = models.TextField()
    fingerprint = FingerprintField(source="body")

    class Meta:
        indexes = [SimhashIndex(fields=["fingerprint"], name="article_fp", max_distance=3)]

    def __str__(self) -> str:
        return self.title


class Page(models.Model):
    """128-bit fingerprints the application computes itself (simdb.fingerprint(text, bits=128))."""

    url = models.CharField(max_length=200)
    fingerprint = FingerprintField(bits=128, null=True)

    class Meta:
        indexes = [SimhashIndex(fields=["fingerprint"], name="page_fp", max_distance=3, blocks=4)]

    def __str__(self) -> str:
        return self.url


class Note(models.Model):
    """Texts whose MinHash signatures are computed on save, searched by Jaccard similarity."""

    body = models.TextField()
    signature = SignatureField(source="body", permutations=128)

    class Meta:
        indexes = [JaccardIndex(fields=["signature"], name="note_sig", threshold=0.8, permutations=128)]

    def __str__(self) -> str:
        return self.body[:40]


def similar_notes(note: Note, min_similarity: float = 0.8) -> models.QuerySet[Note]:
    """The other notes whose estimated Jaccard similarity to this one is at least min_similarity,
    most similar first."""
    if note.signature is None:
        return Note.objects.none()
    return (
        Note.objects.filter(signature__similar=(note.signature, min_similarity))
        .exclude(pk=note.pk)
        .annotate(similarity=JaccardEstimate("signature", note.signature))
        .order_by("-similarity", "pk")
    )


def near_duplicates(article: Article, max_distance: int = 3) -> models.QuerySet[Article]:
    """The other articles within max_distance bits of this one's fingerprint, nearest first."""
    if article.fingerprint is None:
        return Article.objects.none()
    return (
        Article.objects.filter(fingerprint__near=(article.fingerprint, max_distance))
        .exclude(pk=article.pk)
        .annotate(distance=Hamming("fingerprint", article.fingerprint))
        .order_by("distance", "pk")
    )


def near_ids(fingerprint: int, max_distance: int = 3) -> list[int]:
    """The ids within max_distance bits of a fingerprint (what a latency comparison can time
    against the same query in plain SQL)."""
    return list(
        Article.objects.filter(fingerprint__near=(fingerprint, max_distance)).values_list("pk", flat=True)
    )


def near_sql(fingerprint: int, max_distance: int = 3) -> tuple[str, tuple[object, ...]]:
    """The SQL near_ids runs and its parameters (psycopg placeholders), for plain psycopg."""
    query = Article.objects.filter(fingerprint__near=(fingerprint, max_distance)).values_list("pk", flat=True)
    sql, params = query.query.sql_with_params()
    return sql, tuple(params)
