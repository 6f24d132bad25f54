"""The bundled glossary collection: what finq's metrics mean and short explainers of
investing terms, so "what is free cash flow?" or "what is a Roth IRA?" is answered from
documents without any network.

Two kinds of document: one built from the metric catalog (a block per metric, so it can
never fall behind the catalog), and one per markdown explainer in `glossary/`, written by
the team.

Small numbers are spelled out in words, as in the answerer's definitions: the validator
treats a digit in an answer as a figure that needs a fetched fact, and a passage quoted
from here has none.
"""

from __future__ import annotations

from pathlib import Path

from services.ingest.document_model import Block, ParsedDocument
from shared.formula_words import formula_in_words, in_words
from shared.metric_catalog import CATALOG, Metric, mid_sentence

GLOSSARY_DIR = Path(__file__).parent / "glossary"
SOURCE_NAME = "finq glossary"
METRIC_GLOSSARY_TITLE = "finq metric glossary"

_UNIT_WORDS = {
    "USD": "US dollars",
    "USD/share": "US dollars per share",
    "%": "percent",
    "x": "times (a ratio or multiple)",
    "days": "days",
    "shares": "shares",
}


class GlossaryFileError(ValueError):
    """An explainer file that does not have the shape the glossary needs."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path.name}: {message}")
        self.path = path


def metric_entry(metric: Metric) -> str:
    """One metric as a glossary section: what it is, how finq gets it, its other names."""
    lines = [
        f"## {metric.label}",
        f"{metric.label} is {mid_sentence(in_words(metric.description))}",
    ]
    if metric.formula is not None:
        lines.append(f"Formula: {formula_in_words(metric.formula)}.")
    else:
        lines.append("Source: read from the company's filings.")
    if metric.aliases:
        lines.append(f"Also known as: {', '.join(metric.aliases)}.")
    lines.append(f"Unit: {_UNIT_WORDS.get(metric.unit, metric.unit)}.")
    lines.append(f"Category: {metric.category.replace('_', ' ')}.")
    return "\n".join(lines)


def metric_glossary() -> ParsedDocument:
    """Every catalog metric, one block each, in catalog order."""
    blocks = [
        Block(kind="text", text=metric_entry(metric), heading=metric.label) for metric in CATALOG
    ]
    return ParsedDocument(
        title=METRIC_GLOSSARY_TITLE, doc_type="md", blocks=blocks, source_name=SOURCE_NAME
    )


def parse_explainer(path: Path) -> ParsedDocument:
    """A markdown explainer: title from its `# ` line, one block per `## ` section.

    Text between the title and the first section, if any, becomes a block headed by the
    title, so nothing written is dropped.
    """
    title: str | None = None
    # (heading, lines of the block, whether any line under the heading has text)
    sections: list[tuple[str, list[str], bool]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if title is None:
            if line.startswith("# "):
                title = line[2:].strip()
            elif line.strip():
                raise GlossaryFileError(path, "text before the '# ' title line")
        elif line.startswith("## "):
            sections.append((line[3:].strip(), [line], False))
        elif sections:
            heading, lines, has_text = sections[-1]
            lines.append(line)
            sections[-1] = (heading, lines, has_text or bool(line.strip()))
        elif line.strip():
            sections.append((title, [line], True))
    if title is None:
        raise GlossaryFileError(path, "no '# ' title line")
    empty = [heading for heading, _, has_text in sections if not has_text]
    if empty:
        raise GlossaryFileError(path, f"sections without text: {', '.join(empty)}")
    blocks = [
        Block(kind="text", text="\n".join(lines).strip(), heading=heading)
        for heading, lines, _ in sections
    ]
    return ParsedDocument(title=title, doc_type="md", blocks=blocks, source_name=SOURCE_NAME)


def explainer_documents(directory: Path = GLOSSARY_DIR) -> list[ParsedDocument]:
    """Every markdown explainer in the glossary folder, in file-name order."""
    return [parse_explainer(path) for path in sorted(directory.glob("*.md"))]


def glossary_documents() -> list[ParsedDocument]:
    """The whole glossary collection: the metric glossary, then the explainers."""
    return [metric_glossary(), *explainer_documents()]
