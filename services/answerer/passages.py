"""Answers from document passages (deterministic mode): the sentences that best answer the
question, quoted word for word from the passages search found, each with a numbered
citation `[n]` tied to its document and page.

Quoting, not paraphrasing, is what lets the validator hold such an answer to the passages:
every number it shows stands in a passage.
"""

from __future__ import annotations

import re
from typing import Any

from services.answerer.formatting import source_citation
from shared.contracts import Citation, Passage, Source
from shared.english import possessive

# Sentences end at terminal punctuation before a capital, a quote or a bracket; "U.S." and
# "Inc." stay inside one, and decimals never break (no space after the point).
_SENTENCE_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z\"'(\[•])|\n{2,}")
_WORD_RE = re.compile(r"[a-z0-9]+")
_TABLE_MARK_RE = re.compile(r"^\[(?:TABLE \d+|END TABLE)\]$")
_HEADING_LINE_RE = re.compile(r"^\s*(?:#{1,6}\s|(?:Item|ITEM|Part|PART)\s+[0-9IVX]+[A-Z]?\.?\s)")
_STOP = frozenset({
    "the", "a", "an", "of", "in", "on", "for", "to", "and", "or", "is", "are", "was", "were",
    "be", "been", "by", "as", "at", "it", "its", "with", "from", "that", "this", "these",
    "those", "what", "which", "who", "how", "did", "does", "do", "say", "said", "about", "their",
    "there", "has", "have", "had", "will", "would", "can", "could", "any", "all", "our", "we",
    "us", "they", "them", "than", "then", "into", "over", "under", "per", "also", "company",
    "company's",
})  # fmt: skip
MAX_PASSAGES = 3
MAX_QUOTE_CHARS = 600
MAX_SENTENCES = 4
STEM = 5  # words compared by their first letters: "risks" ~ "risk", "suppliers" ~ "supplier"


def _terms(text: str) -> set[str]:
    return {w[:STEM] for w in _WORD_RE.findall(text.lower()) if w not in _STOP and len(w) > 2}


def _sentences(passage: Passage) -> list[str]:
    if passage.is_table:
        # A table is quoted by its rows: the header and the rows the question names.
        return [
            line
            for line in passage.text.splitlines()
            if line.strip() and not _TABLE_MARK_RE.match(line.strip())
        ]
    # Heading lines ("## Withdrawals", "Item 1A. Risk Factors") name a section; they are not
    # sentences to quote, and must not run into the sentence after them.
    prose = "\n\n".join(
        line for line in passage.text.splitlines() if not _HEADING_LINE_RE.match(line)
    )
    return [" ".join(s.split()) for s in _SENTENCE_RE.split(prose) if len(s.strip()) > 20]


def best_quote(question: str, passage: Passage) -> str:
    """The passage's sentence sharing most words with the question, with the sentences after
    it while they fit (for a table: its header and the rows sharing most); word for word."""
    wanted = _terms(question)
    sentences = _sentences(passage)
    if not sentences:
        return passage.text.strip()[:MAX_QUOTE_CHARS]
    scored = [(len(wanted & _terms(s)), -i, s) for i, s in enumerate(sentences)]
    if passage.is_table:
        header = sentences[:2]  # header row and its rule
        rows = sorted((x for x in scored[2:] if x[0] > 0), reverse=True)[:4]
        chosen = header + [s for _, _, s in sorted(rows, key=lambda x: -x[1])]
        return "\n".join(chosen)
    best = max(scored)
    index = -best[1]
    quote = sentences[index]
    # The sentences after it, while they fit: the context a reader needs.
    for following in sentences[index + 1 : index + MAX_SENTENCES]:
        if len(quote) + len(following) + 1 > MAX_QUOTE_CHARS:
            break
        quote = f"{quote} {following}"
    return quote[:MAX_QUOTE_CHARS]


def search_scope(arguments: dict[str, Any], companies: dict[str, str]) -> str:
    """Where a search looked, for the answer that found nothing: "for Apple's 10-K for fiscal
    2022 " (companies: symbol → name)."""
    parts: list[str] = []
    symbols = [str(s) for s in arguments.get("symbols") or []]
    forms = [str(f) for f in arguments.get("forms") or []]
    if symbols:
        names = " or ".join(possessive(companies.get(s, s)) for s in symbols)
        parts.append(f"in {names} {' or '.join(forms) or 'filings'}")
    elif forms:
        parts.append(f"in the {' or '.join(forms)} documents")
    if arguments.get("fiscal_year"):
        quarter = arguments.get("fiscal_quarter")
        parts.append(f"for {f'Q{quarter} of ' if quarter else ''}fiscal {arguments['fiscal_year']}")
    if arguments.get("collection"):
        parts.append(f"in {arguments['collection']!s}")
    return " ".join(parts) + " " if parts else ""


def compose_passages_answer(
    question: str, passages: list[Passage], sources: list[Source], scope: str = ""
) -> tuple[str, list[Citation]]:
    """Up to three passages, one per document page, quoted with `[n]` citations; citation n
    is the n-th in the returned list. `scope` says where nothing was found ("for Apple's
    10-K for fiscal 2022 ")."""
    by_id = {source.source_id: source for source in sources}
    chosen: list[Passage] = []
    pages: set[tuple[str, int | None]] = set()
    for passage in passages:
        key = (passage.document_id, passage.page)
        if key in pages:
            continue
        pages.add(key)
        chosen.append(passage)
        if len(chosen) == MAX_PASSAGES:
            break
    if not chosen:
        return (
            f"No passage was found {scope}among the documents finq has loaded. Load filings "
            "with 'finq ingest filings DIR', or upload a document to POST /v1/documents, "
            "and ask again.",
            [],
        )
    lines: list[str] = []
    citations: list[Citation] = []
    for number, passage in enumerate(chosen, start=1):
        # The tools send each passage with its source; the title stands in without one.
        source = by_id.get(passage.source_id) or Source(
            source_id=passage.source_id,
            label=passage.title,
            form=passage.form,
            url=passage.link,
            page=passage.page,
        )
        citation = source_citation(source)
        quote = best_quote(question, passage)
        if passage.is_table:
            lines.append(f"[{number}] {citation.label}:\n{quote}")
        else:
            lines.append(f'[{number}] {citation.label}: "{quote}"')
        citations.append(citation)
    return "\n".join(lines), citations
