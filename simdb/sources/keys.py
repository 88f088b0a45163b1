"""What a row's key may be: text PostgreSQL can store and its primary-key B-tree can hold.

Checked before a batch is sent, so that one bad key is named (with its file and line) and
counted under --skip-errors instead of failing a whole batch inside the server.
"""

from __future__ import annotations

MAX_KEY_BYTES = 2600  # a B-tree entry holds at most 2704 bytes, its header included (8 KB pages)


def key_problem(key: str) -> str | None:
    """Why `key` cannot be stored, in a phrase ("has a NUL character"), or None when it can."""
    if key == "":
        return "is empty"
    if "\0" in key:
        return "has a NUL character, which PostgreSQL text cannot hold"
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode (a file name whose bytes are not UTF-8, or a lone surrogate)"
    if size > MAX_KEY_BYTES:
        return f"is {size} bytes in UTF-8, more than the {MAX_KEY_BYTES} a key may have"
    return None


def shown(key: str, limit: int = 80) -> str:
    """A key as a message shows it: bytes that are not UTF-8 and NULs escaped (\\xff, \\x00), cut
    to `limit` characters."""
    try:
        text = key.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that no file name decoded to
        text = ascii(key)[1:-1]
    text = text.replace("\0", "\\x00")
    return text if len(text) <= limit else f"{text[: limit - 3]}..."
