"""The pages of `simdb serve`: each parses its request, calls one library function (simdb.serve.review,
simdb.index) on a pooled connection, and renders a template. No logic lives only here."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import psycopg
from psycopg_pool import ConnectionPool
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from simdb import duplicates
from simdb.db.connection import Connection
from simdb.errors import IndexNotFound, InputError, InvalidParameter, SimdbError
from simdb.index import lifecycle as indexes
from simdb.index import texts
from simdb.index.modes import Index
from simdb.serve import plots, review
from simdb.sources import readers

PER_PAGE = 20
UPLOAD_LIMIT = 8 << 20  # bytes of an uploaded file a search reads: a larger one is refused (413)
DEFAULT_SAMPLE = 100
_OVER_PART_SIZE = ("Part exceeded maximum size", "Field exceeded maximum size")  # (Starlette's words)


def link(path: str, **params: object) -> str:
    """A path with its query string (values that are None left out)."""
    given = {name: value for name, value in params.items() if value is not None}
    return f"{path}?{urlencode(given)}" if given else path


def score(value: float | None) -> str:
    """A distance as it is, a similarity to three places, nothing as a dash."""
    if value is None:
        return "–"
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def size(value: int | None) -> str:
    if value is None:
        return "–"
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value = value / 1000  # type: ignore[assignment]
    return str(value)  # pragma: no cover


def _pool(request: Request) -> ConnectionPool[Connection]:
    pool: ConnectionPool[Connection] = request.app.state.pool
    return pool


def _render(request: Request, template: str, code: int = 200, **context: Any) -> Response:
    response: Response = request.app.state.templates.TemplateResponse(
        request, template, context, status_code=code
    )
    return response


def _integer(request: Request, name: str, default: int) -> int:
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise InvalidParameter(f"{name}={text!r} is not a whole number", f"give {name} as digits") from None


def _keep(request: Request) -> str:
    keep = request.query_params.get("keep", duplicates.KEEP_RULES[0])
    if keep not in duplicates.KEEP_RULES:
        raise InvalidParameter(
            f"unknown keep rule {keep!r}", f"use one of {', '.join(duplicates.KEEP_RULES)}"
        )
    return keep


def _key(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidParameter(f"no {name} given", f"give the {name} of a row of the index")
    return value


def _base(conn: Connection, name: str) -> dict[str, Any]:
    """What every page of an index shows: the index, whether it keeps texts."""
    index = indexes.get(conn, name)
    return {"index": index, "keeps_texts": texts.keeps(conn, index), "rules": duplicates.KEEP_RULES}


def home(request: Request) -> Response:
    with _pool(request).connection() as conn:
        summaries = indexes.list_indexes(conn)
        kept = {summary.index.name: texts.keeps(conn, summary.index) for summary in summaries}
    return _render(request, "indexes.html", summaries=summaries, kept=kept)


def index_home(request: Request) -> Response:
    return RedirectResponse(link(f"/i/{request.path_params['name']}/clusters"), status_code=303)


def clusters(request: Request) -> Response:
    keep, page = _keep(request), _integer(request, "page", 1)
    with _pool(request).connection() as conn:
        context = _base(conn, request.path_params["name"])
        found = review.cluster_page(conn, context["index"], keep, page, PER_PAGE)
    return _render(request, "clusters.html", found=found, view="clusters", **context)


def clusters_csv(request: Request) -> Response:
    """The keep/drop list of the view, exactly as `simdb dedup NAME --keep KEEP` prints it."""
    keep = _keep(request)
    name = request.path_params["name"]
    with _pool(request).connection() as conn:
        decided = review.decisions(conn, indexes.get(conn, name), keep)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("cluster", "key", "action"))
    for decision in decided:
        writer.writerow((decision.cluster, decision.key, "keep" if decision.keep else "drop"))
    return Response(
        out.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{name}-dedup-{keep}.csv"'},
    )


def compare_keys(request: Request) -> Response:
    a = _key(request.query_params.get("a"), "key a")
    b = _key(request.query_params.get("b"), "key b")
    with _pool(request).connection() as conn:
        context = _base(conn, request.path_params["name"])
        compared = review.compare_keys(conn, context["index"], a, b)
    return _render(request, "compare.html", compared=compared, view="compare", **context)


async def _form(request: Request, max_files: int) -> FormData | None:
    """The posted form, its text fields read up to UPLOAD_LIMIT bytes (the parser's default is
    1 MiB); None if one is larger."""
    try:
        return await request.form(max_files=max_files, max_fields=4, max_part_size=UPLOAD_LIMIT)
    except HTTPException as error:
        if error.status_code == 400 and str(error.detail).startswith(_OVER_PART_SIZE):
            return None
        raise


async def compare_text(request: Request) -> Response:
    form = await _form(request, max_files=0)
    if form is None:
        return _too_large(request, None)
    text, key = form.get("text"), _key(form.get("b"), "key b")
    if not isinstance(text, str) or not text.strip():
        raise InvalidParameter("no text given", "paste a text to compare")

    def run() -> Response:
        with _pool(request).connection() as conn:
            context = _base(conn, request.path_params["name"])
            compared = review.compare_text(conn, context["index"], text, key)
        return _render(request, "compare.html", compared=compared, view="compare", **context)

    return await run_in_threadpool(run)


def _too_large(request: Request, filename: str | None) -> Response:
    """413 for an upload (a file, or a text given: `filename` None) over UPLOAD_LIMIT: refused
    whole, never searched or shown in part."""
    name = request.path_params["name"]
    given = "the text given" if filename is None else f"the file {filename!r}"
    return _render(
        request,
        "error.html",
        413,
        message=f"{given} is larger than {UPLOAD_LIMIT >> 20} MiB, the most a search here reads",
        hint="search with a part of it pasted, or on the command line:"
        f" simdb query {name} --file FILE (any size)",
        status=413,
    )


def search_form(request: Request) -> Response:
    with _pool(request).connection() as conn:
        context = _base(conn, request.path_params["name"])
    return _render(request, "search.html", text="", matches=None, view="search", **context)


async def search(request: Request) -> Response:
    form = await _form(request, max_files=1)
    if form is None:
        return _too_large(request, None)
    text = form.get("text")
    upload = form.get("file")
    if isinstance(upload, UploadFile) and upload.filename:
        data = await upload.read(UPLOAD_LIMIT + 1)
        if len(data) > UPLOAD_LIMIT:
            return _too_large(request, upload.filename)
        text = readers.decode(data)[0]
    if not isinstance(text, str) or not text.strip():
        raise InvalidParameter("no text given", "paste a text or choose a file")
    query = text

    def run() -> Response:
        with _pool(request).connection() as conn:
            context = _base(conn, request.path_params["name"])
            matches = review.search(conn, context["index"], query)
        return _render(request, "search.html", text=query, matches=matches, view="search", **context)

    return await run_in_threadpool(run)


def pictures(request: Request) -> Response:
    sample = _integer(request, "sample", DEFAULT_SAMPLE)
    with _pool(request).connection() as conn:
        context = _base(conn, request.path_params["name"])
        index: Index = context["index"]
        scores = review.pair_scores(conn, index)
        try:
            calibration = review.sample_calibration(conn, index, sample)
            unreachable = ""
        except InputError as error:
            calibration, unreachable = None, str(error)
    return _render(
        request,
        "pictures.html",
        histogram=plots.histogram(scores),
        calibration=calibration,
        curves=plots.calibration(calibration) if calibration is not None else "",
        unreachable=unreachable,
        legend=plots.legend(),
        sample=sample,
        view="pictures",
        **context,
    )


def _failure(status: int) -> Callable[[Request, Exception], Response]:
    def handler(request: Request, error: Exception) -> Response:
        if isinstance(error, psycopg.Error):
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            message, hint = f"the database refused: {first}", "check the role's rights (`simdb grant`)"
        elif isinstance(error, SimdbError):
            message, hint = error.message, error.hint or ""
        else:  # pragma: no cover (only the types registered below come here)
            message, hint = str(error), ""
        return _render(request, "error.html", status, message=message, hint=hint, status=status)

    return handler


def _errors() -> Iterator[tuple[type[Exception], Callable[[Request, Exception], Response]]]:
    yield IndexNotFound, _failure(404)
    yield InputError, _failure(404)  # (a key that is not in the index, among others)
    yield InvalidParameter, _failure(400)
    yield SimdbError, _failure(500)
    yield psycopg.Error, _failure(503)


ERRORS: dict[Any, Any] = dict(_errors())

ROUTES = [
    Route("/", home),
    Route("/i/{name}", index_home),
    Route("/i/{name}/clusters", clusters),
    Route("/i/{name}/clusters.csv", clusters_csv),
    Route("/i/{name}/compare", compare_keys, methods=["GET"]),
    Route("/i/{name}/compare", compare_text, methods=["POST"]),
    Route("/i/{name}/search", search_form, methods=["GET"]),
    Route("/i/{name}/search", search, methods=["POST"]),
    Route("/i/{name}/pictures", pictures),
]
