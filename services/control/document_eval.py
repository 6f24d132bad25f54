"""`finq eval documents`: questions about what a filing says, asked of finq as a user asks
them, scored on the answer itself.

Each question (services/control/document_questions.jsonl, written by the team) names the
filing, the pages its answer stands on and one or more strings the answer must contain, as
the filing writes them ("164,000", "March 21, 2024", "uncertain tax positions"). It is
asked through a pipeline of its own (gateway, router, tools, answerer, validator) holding
those filings as public filings, text and statements; `--passages` instead searches with the
company, form and fiscal year it names as filters and answers with the passage answerer
alone, as finq did before it read statements. Reported per split
(`dev`, the questions tuning may look at; `heldout`, the ones it must not) and per kind of
answer (a prose sentence or a table row): answer accuracy (every expected string in the
answer), grounding (the validator passed it), and hit@1 / hit@k of an expected page among the
passages the answerer was given.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from services.control.eval_splits import DOCUMENT_SPLITS, DocumentSplit
from services.control.retrieval_eval import (
    RankedHit,
    RetrievalQuestion,
    first_evidence_rank,
)
from services.control.stated_figures import shown_text

QUESTIONS_FILE = Path(__file__).resolve().parent / "document_questions.jsonl"
# Written by a helper who never read how finq reads filings (the text extraction, the
# chunker): the split nobody tunes against.
OUTSIDE_FILE = Path(__file__).resolve().parent / "document_questions_outside.jsonl"
# A second outside split, written after the first had been read for its failures: the one
# that is still unseen.
FRESH_FILE = Path(__file__).resolve().parent / "document_questions_fresh.jsonl"
# A third, written while the fresh split was being read for its failures, by a helper who
# read neither the code nor any question file; measured, not read.
FINAL_FILE = Path(__file__).resolve().parent / "document_questions_final.jsonl"
# A fourth, written the same way while the third was being read for its failures.
LAST_FILE = Path(__file__).resolve().parent / "document_questions_last.jsonl"
# A fifth, written the same way while the third and fourth were being read for their
# failures; its questions all name their company.
NEXT_FILE = Path(__file__).resolve().parent / "document_questions_next.jsonl"
# A sixth, written the same way while the fifth was being read for its failures.
SIXTH_FILE = Path(__file__).resolve().parent / "document_questions_sixth.jsonl"
# A seventh, written the same way while the sixth was being read for its failures.
SEVENTH_FILE = Path(__file__).resolve().parent / "document_questions_seventh.jsonl"
# The router asks search_documents for its default number of passages; the answer is made
# from those, so hit@k looks exactly as deep as the answerer does.
PASSAGES_PER_QUESTION = 5

Split = DocumentSplit
SPLITS = DOCUMENT_SPLITS
Kind = Literal["prose", "table"]
KINDS: tuple[Kind, ...] = ("prose", "table")


class DocumentQuestion(BaseModel):
    """A question, the filing and pages that answer it, and what the answer must say."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    symbol: str
    form: str
    fiscal_year: int
    document: str  # the file name under filings/<SYMBOL>/
    pages: tuple[Annotated[int, Field(ge=1)], ...] = Field(min_length=1)
    # Every one must stand in the answer (compared case- and spacing-insensitively).
    answers: tuple[Annotated[str, Field(min_length=1)], ...] = Field(min_length=1)
    kind: Kind
    split: Split

    def as_retrieval_question(self) -> RetrievalQuestion:
        return RetrievalQuestion(
            question=self.question,
            symbol=self.symbol,
            form=self.form,
            fiscal_year=self.fiscal_year,
            document=self.document,
            pages=self.pages,
        )


@dataclass(frozen=True, slots=True)
class AnsweredQuestion:
    """What the system under test said, and the passages (as pages) it said it from."""

    text: str
    hits: tuple[RankedHit, ...]
    grounded: bool


# The system under test: a question in, its answer out.
Answerer = Callable[[DocumentQuestion], Awaitable[AnsweredQuestion]]


@dataclass(frozen=True, slots=True)
class DocumentOutcome:
    question: DocumentQuestion
    answer: str
    hits: tuple[RankedHit, ...]
    rank: int | None  # 1-based rank of the first passage on an expected page
    missing: tuple[str, ...]  # expected strings the answer lacks
    grounded: bool
    error: str | None = None
    milliseconds: float = 0.0  # from asking to the answer, end to end

    @property
    def correct(self) -> bool:
        return self.error is None and not self.missing


@dataclass(frozen=True, slots=True)
class DocumentMetrics:
    questions: int
    accuracy: float
    grounded: float
    hit_at_1: float
    hit_at_k: float
    errors: int
    p50_ms: float = 0.0  # answer latency, end to end


@dataclass(frozen=True, slots=True)
class DocumentReport:
    k: int
    overall: DocumentMetrics
    by_split: dict[Split, DocumentMetrics]
    by_kind: dict[tuple[Split, Kind], DocumentMetrics]
    outcomes: tuple[DocumentOutcome, ...] = field(repr=False)

    @property
    def wrong(self) -> list[DocumentOutcome]:
        return [o for o in self.outcomes if not o.correct]


def load_document_questions(
    path: Path | None = None, split: Split | Literal["all"] = "all"
) -> list[DocumentQuestion]:
    """The questions of `path`, or of the bundled files (the team's, then the outside
    splits') when none is given."""
    paths = (
        [path]
        if path is not None
        else [
            QUESTIONS_FILE,
            OUTSIDE_FILE,
            FRESH_FILE,
            FINAL_FILE,
            LAST_FILE,
            NEXT_FILE,
            SIXTH_FILE,
            SEVENTH_FILE,
        ]
    )
    lines = [line for each in paths for line in each.read_text(encoding="utf-8").splitlines()]
    questions = [DocumentQuestion.model_validate_json(line) for line in lines if line.strip()]
    return [q for q in questions if split == "all" or q.split == split]


def _normalized(text: str) -> str:
    # Filings write typographic quotes and dashes, and tables break lines: compare the words.
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2014", "-")
    return " ".join(text.casefold().split())


def missing_answers(answer: str, expected: Iterable[str]) -> tuple[str, ...]:
    """The expected strings the answer does not contain."""
    said = _normalized(answer)
    return tuple(e for e in expected if _normalized(e) not in said)


async def _ask(
    question: DocumentQuestion, answer: Answerer, gate: asyncio.Semaphore
) -> DocumentOutcome:
    async with gate:
        started = time.perf_counter()
        try:
            answered = await answer(question)
        except Exception as error:  # a failing answer is a result to report, not a crash
            return DocumentOutcome(
                question, "", (), None, question.answers, False, f"{type(error).__name__}: {error}"
            )
        milliseconds = (time.perf_counter() - started) * 1000
    return DocumentOutcome(
        milliseconds=milliseconds,
        question=question,
        answer=answered.text,
        hits=answered.hits,
        rank=first_evidence_rank(question.as_retrieval_question(), answered.hits),
        missing=missing_answers(answered.text, question.answers),
        grounded=answered.grounded,
    )


def _metrics(outcomes: Sequence[DocumentOutcome], k: int) -> DocumentMetrics:
    count = len(outcomes)
    if not count:
        return DocumentMetrics(0, 0.0, 0.0, 0.0, 0.0, 0)
    return DocumentMetrics(
        questions=count,
        accuracy=sum(o.correct for o in outcomes) / count,
        grounded=sum(o.grounded for o in outcomes) / count,
        hit_at_1=sum(o.rank == 1 for o in outcomes) / count,
        hit_at_k=sum(o.rank is not None and o.rank <= k for o in outcomes) / count,
        errors=sum(o.error is not None for o in outcomes),
        p50_ms=statistics.median(o.milliseconds for o in outcomes),
    )


async def score_documents(
    questions: Sequence[DocumentQuestion],
    answer: Answerer,
    k: int = PASSAGES_PER_QUESTION,
    concurrency: int = 2,
) -> DocumentReport:
    """Answer every question (at most `concurrency` at once) and score the answers."""
    gate = asyncio.Semaphore(concurrency)
    outcomes = await asyncio.gather(*(_ask(q, answer, gate) for q in questions))
    by_split = {
        split: _metrics([o for o in outcomes if o.question.split == split], k)
        for split in SPLITS
        if any(o.question.split == split for o in outcomes)
    }
    by_kind = {
        (split, kind): _metrics(
            [o for o in outcomes if (o.question.split, o.question.kind) == (split, kind)], k
        )
        for split in SPLITS
        for kind in KINDS
        if any((o.question.split, o.question.kind) == (split, kind) for o in outcomes)
    }
    return DocumentReport(k, _metrics(outcomes, k), by_split, by_kind, tuple(outcomes))


def _percent(share: float) -> str:
    return f"{share * 100:5.1f}%"


def _row(label: str, metrics: DocumentMetrics) -> str:
    return (
        f"{label:<16} {metrics.questions:>9} {_percent(metrics.accuracy):>8} "
        f"{_percent(metrics.grounded):>8} {_percent(metrics.hit_at_1):>7} "
        f"{_percent(metrics.hit_at_k):>7} {metrics.errors:>6} {metrics.p50_ms:>7.0f}"
    )


def format_document_report(report: DocumentReport, wrong: int = 25) -> str:
    """A table of the metrics per split and kind, then the questions answered wrong."""
    k = report.k
    lines = [
        f"Answers from filings: accuracy (every expected string in the answer), grounding "
        f"(validator passed), hit@1 and hit@{k} of an expected page among the passages",
        "",
        f"{'split':<16} {'questions':>9} {'accuracy':>8} {'grounded':>8} {'hit@1':>7} "
        f"{f'hit@{k}':>7} {'errors':>6} {'p50 ms':>7}",
    ]
    for split, metrics in report.by_split.items():
        lines.append(_row(split, metrics))
        for (of_split, kind), by_kind in report.by_kind.items():
            if of_split == split:
                lines.append(_row(f"  {kind}", by_kind))
    lines.append(_row("all", report.overall))
    missed = report.wrong
    lines += ["", f"{len(missed)} answered wrong"]
    for outcome in missed[:wrong]:
        q = outcome.question
        pages = ",".join(str(p) for p in q.pages)
        lines.append(f"  [{q.split} {q.id}] {q.question[:90]}")
        got = f"error {outcome.error}" if outcome.error else f"lacks {list(outcome.missing)}"
        rank = f"page found at rank {outcome.rank}" if outcome.rank else "page not found"
        lines.append(f"      expected {q.document} p.{pages}; {got}; {rank}")
    if len(missed) > wrong:
        lines.append(f"  … and {len(missed) - wrong} more")
    return "\n".join(lines)


def _metrics_json(metrics: DocumentMetrics) -> dict[str, Any]:
    return {
        "questions": metrics.questions,
        "accuracy": metrics.accuracy,
        "grounded": metrics.grounded,
        "hit_at_1": metrics.hit_at_1,
        "hit_at_k": metrics.hit_at_k,
        "errors": metrics.errors,
        "p50_ms": metrics.p50_ms,
    }


def document_report_json(report: DocumentReport) -> dict[str, Any]:
    """Everything the table shows, and every answer, as plain JSON values."""
    return {
        "k": report.k,
        "overall": _metrics_json(report.overall),
        "by_split": {split: _metrics_json(m) for split, m in report.by_split.items()},
        "by_kind": {f"{s}/{k}": _metrics_json(m) for (s, k), m in report.by_kind.items()},
        "answers": [
            {
                "id": o.question.id,
                "split": o.question.split,
                "kind": o.question.kind,
                "question": o.question.question,
                "document": o.question.document,
                "pages": list(o.question.pages),
                "expected": list(o.question.answers),
                "correct": o.correct,
                "missing": list(o.missing),
                "grounded": o.grounded,
                "rank": o.rank,
                "error": o.error,
                "milliseconds": o.milliseconds,
                "answer": o.answer,
                "hits": [
                    {"document": h.document, "page": h.page, "page_end": h.page_end} for h in o.hits
                ],
            }
            for o in report.outcomes
        ],
    }


def _report_out(report: DocumentReport, report_path: Path | None) -> None:
    print(format_document_report(report))
    if report_path is not None:
        report_path.write_text(json.dumps(document_report_json(report), indent=2))
        print(f"wrote {report_path}")


async def evaluate_documents(
    dsn: str,
    data_dir: Path,
    report_path: Path | None,
    split: Split | Literal["all"] = "all",
    questions_path: Path | None = None,
) -> DocumentReport:
    """The passage answerer alone: ingest the filings the questions are about (kept if
    already held), then answer each offline with search_documents given the question's
    filters, the passage answerer and the validator."""
    from services.answerer.passages import compose_passages_answer
    from services.control.retrieval_eval import ingest_evaluation_filings
    from services.tools.document_search import DocumentSearch
    from services.validator.checking import check_answer
    from shared.db import create_pool
    from shared.embeddings import EmbeddingSettings, load_embedder
    from shared.tools import SearchDocumentsArgs

    questions = load_document_questions(questions_path, split)
    pool = await create_pool(dsn, min_size=1, max_size=4)
    try:
        embedder = await asyncio.to_thread(load_embedder, EmbeddingSettings())
        needed = sorted({(q.symbol, q.document) for q in questions})
        await ingest_evaluation_filings(pool, embedder, data_dir, needed)
        documents = DocumentSearch(embedder)

        async def answer(question: DocumentQuestion) -> AnsweredQuestion:
            args = SearchDocumentsArgs(
                query=question.question[:500],
                symbols=[question.symbol],
                forms=[question.form],
                fiscal_year=question.fiscal_year,
                limit=PASSAGES_PER_QUESTION,
            )
            result = await documents.search(pool, args)
            text, citations = compose_passages_answer(
                question.question, result.passages, result.sources
            )
            validation = check_answer(
                text, [], citations, result.sources, [p.text for p in result.passages]
            )
            hits = tuple(
                RankedHit(p.source_name or p.title, p.page or 0, p.page_end)
                for p in result.passages
            )
            return AnsweredQuestion(text, hits, validation.passed)

        report = await score_documents(questions, answer)
    finally:
        await pool.close()
    _report_out(report, report_path)
    return report


def cited_pages(body: dict[str, Any], names: dict[str, str]) -> tuple[RankedHit, ...]:
    """The pages an answer cites, as the evaluation ranks them: a citation of a held
    document ("doc:<id>:…" with a page) under that document's file name, in citing order."""
    hits: list[RankedHit] = []
    for citation in body.get("citations", []):
        source = str(citation.get("source_id", ""))
        page = citation.get("page")
        if not source.startswith("doc:") or not page:
            continue
        document_id = source.split(":")[1]
        hits.append(RankedHit(names.get(document_id, document_id), int(page), None))
    return tuple(hits)


def evaluate_documents_in_pipeline(
    data_dir: Path,
    report_path: Path | None,
    split: Split | Literal["all"] = "all",
    home: Path | None = None,
    questions_path: Path | None = None,
) -> DocumentReport:
    """Every question asked of a pipeline of its own (under `home`, kept between runs when
    given, so the filings are read once) that holds the questions' filings as public
    filings, as the demo user; hits are the pages the answer cites."""
    import httpx

    from services.control.own_pipeline import own_pipeline
    from services.control.progress import Progress
    from services.control.retrieval_eval import ingest_evaluation_filings
    from shared.db import create_pool
    from shared.embeddings import EmbeddingSettings, load_embedder

    questions = load_document_questions(questions_path, split)
    names: dict[str, str] = {}

    async def load_filings(owner_dsn: str) -> None:
        pool = await create_pool(owner_dsn, min_size=1, max_size=4)
        try:
            embedder = await asyncio.to_thread(load_embedder, EmbeddingSettings())
            needed = sorted({(q.symbol, q.document) for q in questions})
            ids = await ingest_evaluation_filings(pool, embedder, data_dir, needed)
        finally:
            await pool.close()
        names.update({document_id: name for name, document_id in ids.items()})

    async def ask_all(url: str, key: str) -> DocumentReport:
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=url, timeout=120.0, headers=headers) as client:

            async def answer(question: DocumentQuestion) -> AnsweredQuestion:
                response = await client.post("/v1/ask", json={"question": question.question})
                response.raise_for_status()
                body = response.json()
                return AnsweredQuestion(
                    shown_text(body), cited_pages(body, names), body["validation"]["passed"]
                )

            # One at a time, so each answer's latency is its own.
            return await score_documents(questions, answer, concurrency=1)

    with own_pipeline(Progress(), home, load_filings) as pipeline:
        report = asyncio.run(ask_all(pipeline.url, pipeline.key))
    _report_out(report, report_path)
    return report
