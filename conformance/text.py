"""Text from outside the harness, made safe to write down or show.

Exception messages, backend names and version strings come from the code under test. They
reach repro.py (which people and `replay --scripts` run), HTML, summary.json and the terminal.
A message holding `\"\"\"` would end a docstring and run the rest as code; an ESC sequence
would drive the terminal of whoever reads the report. So every such string goes through here:
control and other non-printable characters are written as their Python escapes, and a very long
message is cut to a stated length.
"""

from __future__ import annotations

# A message longer than this is cut: thunder's longest real messages hold a trace (~5,000
# characters); a backend that raises 1 MB should not make every report 1 MB.
MAX_CHARS = 8000


def cut(text: str, limit: int = MAX_CHARS) -> str:
    """`text`, or its first `limit` characters and a note of how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more characters cut]"


def printable(text: str, limit: int = MAX_CHARS) -> str:
    """One line: every character that is not printable (newlines, ESC, NUL, line and paragraph
    separators...) written as its escape, as `repr` writes it."""
    text = cut(str(text), limit)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def visible(text: str, limit: int = MAX_CHARS) -> str:
    """Like `printable`, but newlines kept: for a block of text shown as it is (HTML, a terminal)."""
    return "\n".join(printable(line, limit) for line in cut(str(text), limit).split("\n"))


def comment(text: str, limit: int = MAX_CHARS) -> str:
    """`text` as Python comment lines (`# ...`), one per line of it, none able to end the comment."""
    return "\n".join(f"# {printable(line)}".rstrip() for line in cut(str(text), limit).split("\n"))
