"""Small markdown helpers shared by the reference pages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def cell(value: Any) -> str:
    """One table cell: `|` escaped, newlines folded, empty as a dash."""
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if text else "-"


def code(value: Any) -> str:
    """A value as inline code (repr for non-strings, the string quoted)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return "`" + text.replace("`", "'") + "`"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    rows = [[cell(value) for value in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def number(value: float | int | None) -> str:
    """A range bound: integers as integers, None as empty."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def value_range(minimum, maximum) -> str:
    if minimum is None and maximum is None:
        return ""
    if maximum is None:
        return f">= {number(minimum)}"
    if minimum is None:
        return f"<= {number(maximum)}"
    return f"{number(minimum)} .. {number(maximum)}"
