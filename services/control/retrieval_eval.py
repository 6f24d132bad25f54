"""`finq eval retrieval`: questions against the document search, scored on evidence pages.

Each question names the filing and the 1-based physical PDF pages its evidence sits on. The
search returns ranked (document, page) hits; a question is answered at the rank of the first
hit on one of its evidence pages. Reported per source (the team's own questions, and the
FinanceBench questions whose PDFs are staged) and overall: hit@1, hit@k and the mean
reciprocal rank over the first `RANK_DEPTH` hits, once with the question's company, form and
fiscal year passed as filters and once without, so the report shows what the filters buy.

FinanceBench is licensed non-commercial: its questions are read from ../shared at run time
and never copied into the repository.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

QUESTIONS_FILE = Path(__file__).resolve().parent / "retrieval_questions.jsonl"
FINANCEBENCH_QUESTIONS = Path("qa", "financebench", "financebench_open_source.jsonl")
FINANCEBENCH_DOCUMENTS = Path("qa", "financebench", "financebench_document_information.jsonl")
# FinanceBench's `evidence_page_num` is 0-based: its `evidence_text_full_page` is the text of
# PDF page evidence_page_num + 1 (checked against all five staged PDFs).
FINANCEBENCH_PAGE_BASE = 0
# MRR looks this deep into the ranking; a hit further down counts for nothing.
RANK_DEPTH = 10
TARGET_HIT_AT_K = 0.80

Source = Literal["team", "financebench"]
SOURCES: tuple[Source, ...] = ("team", "financebench")
# FinanceBench spells document types in lower case without the dash.
_FORMS = {"10k": "10-K", "10q": "10-Q", "8k": "8-K"}
_DOC_NAME = re.compile(r"_(?P<year>\d{4})(?:Q[1-4])?_(?P<form>10K|10Q|8K)\b", re.IGNORECASE)


class RetrievalQuestion(BaseModel):
    """A question and where its evidence sits: `pages` are 1-based physical PDF pages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str = Field(min_length=1)
    symbol: str
    form: str
    fiscal_year: int
    document: str  # the file name under filings/<SYMBOL>/, e.g. "APPLE_2022_10K.pdf"
    pages: tuple[Annotated[int, Field(ge=1)], ...] = Field(min_length=1)
    source: Source = "team"


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """What the search may narrow to; None means unrestricted."""

    symbols: tuple[str, ...] | None = None
    forms: tuple[str, ...] | None = None
    fiscal_year: int | None = None


@dataclass(frozen=True, slots=True)
class RankedHit:
    """One result of the search: a page of a source file (1-based).

    A chunk that runs over several pages sets `page_end`; it counts as being on each.
    """

    document: str
    page: int
    page_end: int | None = None


# The search under test: the query and optional filters in, hits best first out. It should
# return at least RANK_DEPTH hits when it has them; anything past RANK_DEPTH is ignored.
Search = Callable[[str, SearchFilters | None], Awaitable[list[RankedHit]]]


@dataclass(frozen=True, slots=True)
class QuestionOutcome:
    question: RetrievalQuestion
    hits: tuple[RankedHit, ...]
    rank: int | None  # 1-based rank of the first hit on an evidence page, within RANK_DEPTH
    error: str | None = None  # the search raised; the question counts as a miss


@dataclass(frozen=True, slots=True)
class Metrics:
    questions: int
    hit_at_1: float
    hit_at_k: float
    mrr: float
    errors: int


@dataclass(frozen=True, slots=True)
class RetrievalReport:
    with_filters: bool
    k: int
    overall: Metrics
    by_source: dict[Source, Metrics]
    outcomes: tuple[QuestionOutcome, ...] = field(repr=False)

    @property
    def misses(self) -> list[QuestionOutcome]:
        """Questions with no evidence page in the top k (a later hit shows in `rank`)."""
        return [o for o in self.outcomes if o.rank is None or o.rank > self.k]

    @property
    def meets_target(self) -> bool:
        return self.overall.hit_at_k >= TARGET_HIT_AT_K


def load_team_questions(path: Path = QUESTIONS_FILE) -> list[RetrievalQuestion]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [RetrievalQuestion.model_validate_json(line) for line in lines if line.strip()]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def load_financebench_questions(data_dir: Path) -> list[RetrievalQuestion]:
    """The FinanceBench questions whose source PDF is staged under data_dir/filings.

    The folder a PDF sits in (filings/<SYMBOL>/<doc_name>.pdf) gives the ticker; form and
    fiscal year come from FinanceBench's document table, else from the document name.
    Evidence on other documents than the question's own is left out.
    """
    staged = {
        pdf.stem: pdf
        for pdf in sorted((data_dir / "filings").glob("*/*.pdf"))
        if pdf.parent.name.isupper()
    }
    documents = {row["doc_name"]: row for row in _read_jsonl(data_dir / FINANCEBENCH_DOCUMENTS)}
    questions: list[RetrievalQuestion] = []
    for row in _read_jsonl(data_dir / FINANCEBENCH_QUESTIONS):
        doc_name = row["doc_name"]
        pdf = staged.get(doc_name)
        if pdf is None:
            continue
        pages = sorted(
            {
                int(evidence["evidence_page_num"]) - FINANCEBENCH_PAGE_BASE + 1
                for evidence in row.get("evidence", [])
                if evidence.get("doc_name", doc_name) == doc_name
            }
        )
        if not pages:
            continue
        form, fiscal_year = _form_and_year(doc_name, documents.get(doc_name))
        questions.append(
            RetrievalQuestion(
                question=row["question"],
                symbol=pdf.parent.name,
                form=form,
                fiscal_year=fiscal_year,
                document=pdf.name,
                pages=tuple(pages),
                source="financebench",
            )
        )
    return questions


def _form_and_year(doc_name: str, document: dict[str, Any] | None) -> tuple[str, int]:
    if document is not None and document.get("doc_type") in _FORMS and document.get("doc_period"):
        return _FORMS[document["doc_type"]], int(document["doc_period"])
    named = _DOC_NAME.search(doc_name)
    if named is None:
        raise ValueError(
            f"FinanceBench document {doc_name!r}: no form and fiscal year in the document "
            "table or the name (expected NAME_YYYY_10K)"
        )
    return _FORMS[named["form"].lower()], int(named["year"])


async def ingest_evaluation_filings(
    pool: Any, embedder: Any, data_dir: Path, needed: Iterable[tuple[str, str]]
) -> dict[str, str]:
    """Load the filings an evaluation asks about, (ticker, file name) under
    data_dir/filings/<TICKER>/, into the filings collection; a file already held as it is
    is kept, so a second run over the same database is quick. Each file name's document
    id."""
    from services.ingest.documents import ingest_file
    from shared.tools import FILINGS_COLLECTION

    ids: dict[str, str] = {}
    for symbol, name in needed:
        path = data_dir / "filings" / symbol / name
        stored = await ingest_file(
            pool, embedder, path, collection=FILINGS_COLLECTION, folder_symbol=symbol
        )
        how = "held" if stored.reused else f"{stored.seconds:.1f} s"
        print(f"{stored.title}: {stored.chunks} chunks ({how})", flush=True)
        ids[name] = stored.document_id
    return ids


def filters_for(question: RetrievalQuestion) -> SearchFilters:
    return SearchFilters(
        symbols=(question.symbol,), forms=(question.form,), fiscal_year=question.fiscal_year
    )


def _same_document(a: str, b: str) -> bool:
    # Searches may report a path or the bare file name; the file name is what identifies it.
    return Path(a).name.casefold() == Path(b).name.casefold()


def _on_evidence(hit: RankedHit, question: RetrievalQuestion) -> bool:
    if not _same_document(hit.document, question.document):
        return False
    last = hit.page if hit.page_end is None else max(hit.page, hit.page_end)
    return any(hit.page <= page <= last for page in question.pages)


def first_evidence_rank(question: RetrievalQuestion, hits: Sequence[RankedHit]) -> int | None:
    for rank, hit in enumerate(hits[:RANK_DEPTH], start=1):
        if _on_evidence(hit, question):
            return rank
    return None


async def _ask(
    question: RetrievalQuestion, search: Search, with_filters: bool, gate: asyncio.Semaphore
) -> QuestionOutcome:
    filters = filters_for(question) if with_filters else None
    async with gate:
        try:
            hits = tuple(await search(question.question, filters))
        except Exception as error:  # a failing search is a result to report, not a crash
            return QuestionOutcome(question, (), None, f"{type(error).__name__}: {error}")
    return QuestionOutcome(question, hits, first_evidence_rank(question, hits))


def _metrics(outcomes: Sequence[QuestionOutcome], k: int) -> Metrics:
    count = len(outcomes)
    if not count:
        return Metrics(0, 0.0, 0.0, 0.0, 0)
    ranks = [o.rank for o in outcomes]
    return Metrics(
        questions=count,
        hit_at_1=sum(rank == 1 for rank in ranks) / count,
        hit_at_k=sum(rank is not None and rank <= k for rank in ranks) / count,
        mrr=sum(1 / rank for rank in ranks if rank is not None) / count,
        errors=sum(o.error is not None for o in outcomes),
    )


async def score(
    questions: Sequence[RetrievalQuestion],
    search: Search,
    with_filters: bool,
    k: int = 5,
    concurrency: int = 4,
) -> RetrievalReport:
    """Ask every question (at most `concurrency` at once) and score the rankings."""
    if not 1 <= k <= RANK_DEPTH:
        raise ValueError(f"k must be between 1 and {RANK_DEPTH}, got {k}")
    gate = asyncio.Semaphore(concurrency)
    outcomes = await asyncio.gather(*(_ask(q, search, with_filters, gate) for q in questions))
    by_source = {
        source: _metrics([o for o in outcomes if o.question.source == source], k)
        for source in SOURCES
        if any(o.question.source == source for o in outcomes)
    }
    return RetrievalReport(with_filters, k, _metrics(outcomes, k), by_source, tuple(outcomes))


async def run_retrieval_eval(
    search: Search,
    data_dir: Path,
    with_and_without_filters: bool = True,
    *,
    questions_path: Path = QUESTIONS_FILE,
    include_financebench: bool = True,
    k: int = 5,
    concurrency: int = 4,
) -> list[RetrievalReport]:
    """The team's and FinanceBench's questions, scored with filters, then without."""
    questions = load_team_questions(questions_path)
    if include_financebench:
        questions += load_financebench_questions(data_dir)
    reports = [await score(questions, search, with_filters=True, k=k, concurrency=concurrency)]
    if with_and_without_filters:
        reports.append(
            await score(questions, search, with_filters=False, k=k, concurrency=concurrency)
        )
    return reports


def _percent(share: float) -> str:
    return f"{share * 100:5.1f}%"


def _hit_text(hit: RankedHit) -> str:
    pages = f"{hit.page}" if hit.page_end in (None, hit.page) else f"{hit.page}-{hit.page_end}"
    return f"{Path(hit.document).name} p.{pages}"


def format_report(reports: RetrievalReport | Iterable[RetrievalReport], misses: int = 15) -> str:
    """A table of the metrics per filter setting and source, then the first misses of each."""
    reports = [reports] if isinstance(reports, RetrievalReport) else list(reports)
    if not reports:
        return "No retrieval reports."
    k = reports[0].k
    lines = [
        f"Retrieval over filings: hit@1, hit@{k}, MRR@{RANK_DEPTH} "
        f"(target hit@{k} >= {TARGET_HIT_AT_K:.0%})",
        "",
        f"{'filters':<8} {'source':<13} {'questions':>9} {'hit@1':>7} "
        f"{f'hit@{k}':>7} {'MRR':>6} {'errors':>6}",
    ]
    for report in reports:
        setting = "with" if report.with_filters else "without"
        rows = [*report.by_source.items(), ("all", report.overall)]
        for source, metrics in rows:
            lines.append(
                f"{setting:<8} {source:<13} {metrics.questions:>9} "
                f"{_percent(metrics.hit_at_1):>7} {_percent(metrics.hit_at_k):>7} "
                f"{metrics.mrr:>6.3f} {metrics.errors:>6}"
            )
    for report in reports:
        setting = "with" if report.with_filters else "without"
        verdict = "meets" if report.meets_target else "BELOW"
        missed = report.misses
        lines += ["", f"{setting} filters: hit@{k} {verdict} target; {len(missed)} misses"]
        for outcome in missed[:misses]:
            q = outcome.question
            expected = f"{q.document} p.{','.join(str(p) for p in q.pages)}"
            if outcome.error is not None:
                got = f"error {outcome.error}"
            else:
                top = "; ".join(_hit_text(hit) for hit in outcome.hits[:3]) or "nothing"
                later = f" (found at rank {outcome.rank})" if outcome.rank else ""
                got = f"got {top}{later}"
            lines.append(f"  [{q.source}] {q.question[:90]}")
            lines.append(f"      expected {expected}; {got}")
        if len(missed) > misses:
            lines.append(f"  … and {len(missed) - misses} more")
    return "\n".join(lines)


def _metrics_json(metrics: Metrics) -> dict[str, Any]:
    return {
        "questions": metrics.questions,
        "hit_at_1": metrics.hit_at_1,
        "hit_at_k": metrics.hit_at_k,
        "mrr": metrics.mrr,
        "errors": metrics.errors,
    }


def report_json(reports: RetrievalReport | Iterable[RetrievalReport]) -> dict[str, Any]:
    """Everything `format_report` shows, and every miss, as plain JSON values."""
    reports = [reports] if isinstance(reports, RetrievalReport) else list(reports)
    return {
        "rank_depth": RANK_DEPTH,
        "target_hit_at_k": TARGET_HIT_AT_K,
        "reports": [
            {
                "with_filters": report.with_filters,
                "k": report.k,
                "meets_target": report.meets_target,
                "overall": _metrics_json(report.overall),
                "by_source": {s: _metrics_json(m) for s, m in report.by_source.items()},
                "misses": [
                    {
                        "question": o.question.question,
                        "source": o.question.source,
                        "symbol": o.question.symbol,
                        "fiscal_year": o.question.fiscal_year,
                        "document": o.question.document,
                        "pages": list(o.question.pages),
                        "rank": o.rank,
                        "error": o.error,
                        "hits": [
                            {"document": h.document, "page": h.page, "page_end": h.page_end}
                            for h in o.hits[:RANK_DEPTH]
                        ],
                    }
                    for o in report.misses
                ],
            }
            for report in reports
        ],
    }
