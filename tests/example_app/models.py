"""The example application's own model: simdb is added to it, not the other way round."""

from __future__ import annotations

from sqlalchemy import Index, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simdb.sqlalchemy import Fingerprint, simhash_indexes


class Base(DeclarativeBase):
    pass


class Article(Base):
    __tablename__ = "articles"
    __table_args__ = (Index("articles_title", "title"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    # the fingerprint of body, which the application writes (migration a0003 attaches the index)
    fp: Mapped[int | None] = mapped_column(Fingerprint(max_distance=3, blocks=4))


simhash_indexes(Article.fp, "articles_fp")  # simdb's B-trees on fp, in the MetaData for autogenerate
