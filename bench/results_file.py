"""bench/RESULTS.md, where each benchmark writes its own block between two marker comments
and leaves every other block as it was."""

from __future__ import annotations

from pathlib import Path

RESULTS_MD = Path(__file__).resolve().parent / "RESULTS.md"


def replace_block(begin: str, end: str, body: str, heading: str, path: Path = RESULTS_MD) -> None:
    """Put `body` between `begin` and `end`; the first time, add `heading` (a section
    title and a paragraph saying what is measured) and the markers at the end of the file."""
    text = path.read_text()
    if begin not in text or end not in text:
        text = f"{text.rstrip()}\n\n{heading.strip()}\n\n{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{body.strip()}\n{end}{tail}")
