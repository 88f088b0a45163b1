"""A small corpus of planted near-duplicates for `simdb serve`'s tests and README screenshots."""

from __future__ import annotations

import json
import random
from pathlib import Path

_WORDS = [
    "river",
    "stone",
    "market",
    "winter",
    "garden",
    "letter",
    "harbour",
    "window",
    "morning",
    "engine",
    "paper",
    "village",
    "quiet",
    "signal",
    "forest",
    "bridge",
    "candle",
    "orchard",
    "ladder",
    "silver",
    "thunder",
    "meadow",
    "lantern",
    "pocket",
    "mirror",
    "valley",
    "kettle",
    "saddle",
    "compass",
    "timber",
    "shadow",
    "feather",
    "ribbon",
    "anchor",
    "basket",
    "cellar",
    "meadow",
    "plough",
    "granite",
    "violet",
    "marble",
    "copper",
    "willow",
    "falcon",
    "hollow",
    "summit",
    "velvet",
    "ember",
    "tide",
]


def paragraph(seed: int, words: int = 240) -> str:
    rng = random.Random(seed)
    chosen = [rng.choice(_WORDS) for _ in range(words)]
    lines = [" ".join(chosen[at : at + 12]) for at in range(0, words, 12)]
    return ".\n".join(line.capitalize() for line in lines) + ".\n"


def edited(text: str, changes: dict[int, str]) -> str:
    """`text` with word number i (counting whitespace-separated words) replaced by changes[i]."""
    words = text.split(" ")
    for at, word in changes.items():
        words[at] = word
    return " ".join(words)


SCRIPT = '<script>document.title = "pwned"; window.__pwned = 1;</script>'


# name -> text; the planted clusters: alpha (3 files), beta (2), script (2); gamma and delta alone
def documents() -> dict[str, str]:
    alpha, beta, gamma, delta, script = (paragraph(seed) for seed in (1, 2, 3, 4, 5))
    return {
        "alpha.txt": alpha,
        "alpha-copy.txt": edited(alpha, {30: "zebra"}),
        "alpha-draft.txt": edited(alpha, {30: "zebra", 120: "quokka"}),
        "beta.txt": beta,
        "beta-edit.txt": edited(beta, {10: "walrus"}),
        "gamma.txt": gamma,
        "delta.txt": delta,
        "script.txt": SCRIPT + "\n" + script,
        "script-copy.txt": SCRIPT + "\n" + edited(script, {50: "narwhal"}),
    }


CLUSTERS = (
    ("alpha.txt", "alpha-copy.txt", "alpha-draft.txt"),
    ("beta.txt", "beta-edit.txt"),
    ("script.txt", "script-copy.txt"),
)


def write_folder(folder: Path) -> dict[str, str]:
    """The documents as files in `folder`; returns {absolute path (the key): text}."""
    folder.mkdir(parents=True, exist_ok=True)
    keys = {}
    for name, text in documents().items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        keys[str(path.resolve())] = text
    return keys


def write_records(path: Path) -> dict[str, str]:
    """The documents as JSONL records keyed rec-<name>; returns {key: text}."""
    records = {f"rec-{name.removesuffix('.txt')}": text for name, text in documents().items()}
    with path.open("w", encoding="utf-8") as out:
        for key, text in records.items():
            out.write(json.dumps({"key": key, "text": text}) + "\n")
    return records
