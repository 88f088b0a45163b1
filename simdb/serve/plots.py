"""The pictures of `simdb serve`, drawn as inline SVG: the pairs' distances (or estimated Jaccard)
as bars, and `simdb calibrate`'s precision and recall per k as lines. Only numbers and simdb's own
words go into them (escaped all the same)."""

from __future__ import annotations

from markupsafe import Markup, escape

from simdb.measure.calibrate import MAX_K, THRESHOLDS, Calibration
from simdb.serve.review import Scores

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 44
COLOURS = ("#2f6fb0", "#c0562f", "#3b8f4a")  # one per Jaccard threshold


def _frame(body: list[str], label: str, x_title: str, y_title: str) -> Markup:
    plot_bottom = HEIGHT - BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" aria-label="{escape(label)}"'
        f' viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}">',
        f"<title>{escape(label)}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{plot_bottom}" x2="{WIDTH - RIGHT}" y2="{plot_bottom}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{plot_bottom}"/>',
        *body,
        f'<text class="axis-title" x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 6}"'
        f' text-anchor="middle">{escape(x_title)}</text>',
        f'<text class="axis-title" x="14" y="{(TOP + plot_bottom) / 2}" text-anchor="middle"'
        f' transform="rotate(-90 14 {(TOP + plot_bottom) / 2})">{escape(y_title)}</text>',
        "</svg>",
    ]
    return Markup("".join(parts))  # noqa: S704 (numbers and escaped words only)


def histogram(scores: Scores) -> Markup:
    """One bar per distance 0..cutoff (simhash), or per estimated Jaccard step of 0.01 from the
    threshold to 1 (jaccard), its height the number of pairs; each bar carries its value and
    count (data-value, data-count) and a tooltip."""
    if scores.kind == "distance":
        values: list[float] = list(range(int(scores.cutoff) + 1))
        x_title = "Hamming distance of the pair (bits)"
    else:
        low = round(scores.cutoff, 2)
        values = [round(low + step / 100, 2) for step in range(round((1 - low) * 100) + 1)]
        x_title = "estimated Jaccard of the pair"
    counts = [scores.counts.get(value, 0) for value in values]
    top = max(counts, default=0) or 1
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_width / len(values)
    body = []
    for tick in _ticks(top):
        y = TOP + plot_height * (1 - tick / top)
        body.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
        body.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>')
    every = max(1, len(values) // 12)
    for at, (value, count) in enumerate(zip(values, counts, strict=True)):
        height = plot_height * count / top
        x = LEFT + at * slot
        shown = value if scores.kind == "distance" else f"{value:.2f}"
        if count:
            body.append(
                f'<rect class="bar" data-value="{shown}" data-count="{count}" x="{x + slot * 0.12:.1f}"'
                f' y="{TOP + plot_height - height:.1f}" width="{slot * 0.76:.1f}" height="{height:.1f}">'
                f"<title>{shown}: {count} pairs</title></rect>"
            )
        if at % every == 0:
            body.append(
                f'<text class="tick" x="{x + slot / 2:.1f}" y="{HEIGHT - BOTTOM + 16}"'
                f' text-anchor="middle">{shown}</text>'
            )
    return _frame(body, f"pairs by {scores.kind}", x_title, "pairs")


def _ticks(top: int) -> list[int]:
    """About four round steps from 0 to `top`."""
    step = 1
    while top / step > 5:
        for factor in (2, 5, 10):
            if top / (step * factor) <= 5:
                step *= factor
                break
        else:
            step *= 10
    return list(range(0, top + 1, step))


def calibration(result: Calibration) -> Markup:
    """Precision (solid) and recall (dashed) of distance <= k against Jaccard >= t, for k = 0..MAX_K,
    one colour per t; each point carries its k, t and value (data-*)."""
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def point(k: int, value: float) -> tuple[float, float]:
        return LEFT + plot_width * k / MAX_K, TOP + plot_height * (1 - value)

    body = []
    for tick in (0, 0.25, 0.5, 0.75, 1):
        _, y = point(0, tick)
        body.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
        body.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>')
    for k in range(MAX_K + 1):
        x, _ = point(k, 0)
        body.append(
            f'<text class="tick" x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{k}</text>'
        )
    for colour, t in zip(COLOURS, THRESHOLDS, strict=True):
        for measure, dashes in (("precision", ""), ("recall", ' stroke-dasharray="6 4"')):
            values = getattr(result, measure)[t]
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(k, v) for k, v in enumerate(values)))
            body.append(
                f'<polyline class="curve {measure}" data-threshold="{t}" points="{path}" fill="none"'
                f' stroke="{colour}" stroke-width="2"{dashes}/>'
            )
            for k, value in enumerate(values):
                x, y = point(k, value)
                body.append(
                    f'<circle class="point {measure}" data-k="{k}" data-threshold="{t}"'
                    f' data-value="{value:.4f}" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                    f"<title>k={k}, J&gt;={t}: {measure}"
                    f" {value:.3f}</title></circle>"
                )
    return _frame(body, "precision and recall per k", "k: the largest Hamming distance searched", "share")


def legend() -> list[tuple[str, float]]:
    """The colour of each Jaccard threshold, for the page's legend."""
    return list(zip(COLOURS, THRESHOLDS, strict=True))
