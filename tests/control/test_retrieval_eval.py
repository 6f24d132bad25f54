"""`finq eval retrieval`: the scoring counts a question answered at the rank of the first hit
on one of its evidence pages, and the question sets point at pages that exist.

The scoring tests run on a scripted search; the ones on the real filings and FinanceBench
skip without ../shared/data.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path

import pdfplumber
import pytest

from services.control.retrieval_eval import (
    RANK_DEPTH,
    RankedHit,
    RetrievalQuestion,
    SearchFilters,
    Source,
    format_report,
    load_financebench_questions,
    load_team_questions,
    report_json,
    run_retrieval_eval,
    score,
)
from tests.helpers import require_shared_data, shared_data_dir


def shared_data() -> Path:
    return require_shared_data()


def question(
    text: str,
    document: str = "APPLE_2022_10K.pdf",
    pages: tuple[int, ...] = (7,),
    source: Source = "team",
) -> RetrievalQuestion:
    return RetrievalQuestion(
        question=text,
        symbol="AAPL",
        form="10-K",
        fiscal_year=2022,
        document=document,
        pages=pages,
        source=source,
    )


def miss(page: int = 99) -> RankedHit:
    return RankedHit("APPLE_2022_10K.pdf", page)


def ranked(evidence_rank: int | None, evidence: RankedHit | None = None) -> list[RankedHit]:
    """Twelve hits, with the evidence page at `evidence_rank` (1-based) if given."""
    hits = [miss(90 + i) for i in range(12)]
    if evidence_rank is not None:
        hits[evidence_rank - 1] = evidence or RankedHit("APPLE_2022_10K.pdf", 7)
    return hits


class ScriptedSearch:
    """Answers each question with the hits scripted for it and records the filters asked."""

    def __init__(self, script: dict[str, list[RankedHit] | Exception]) -> None:
        self.script = script
        self.filters: dict[str, SearchFilters | None] = {}

    async def __call__(self, query: str, filters: SearchFilters | None) -> list[RankedHit]:
        self.filters[query] = filters
        answer = self.script[query]
        if isinstance(answer, Exception):
            raise answer
        return answer


async def test_hit_at_1_hit_at_5_and_mrr_follow_the_rank_of_the_first_evidence_page() -> None:
    questions = [question(f"q{rank}") for rank in ("1", "3", "7", "none")]
    search = ScriptedSearch(
        {"q1": ranked(1), "q3": ranked(3), "q7": ranked(7), "qnone": ranked(None)}
    )

    report = await score(questions, search, with_filters=True)

    assert report.overall.questions == 4
    assert report.overall.hit_at_1 == 0.25
    assert report.overall.hit_at_k == 0.5
    assert math.isclose(report.overall.mrr, (1 + 1 / 3 + 1 / 7 + 0) / 4)
    assert [o.rank for o in report.outcomes] == [1, 3, 7, None]
    assert [o.question.question for o in report.misses] == ["q7", "qnone"]


async def test_an_evidence_page_below_rank_ten_counts_for_nothing() -> None:
    search = ScriptedSearch({"deep": ranked(RANK_DEPTH + 1)})

    report = await score([question("deep")], search, with_filters=True)

    assert (report.overall.hit_at_k, report.overall.mrr) == (0.0, 0.0)


async def test_the_right_page_of_another_filing_is_not_a_hit() -> None:
    other_year = RankedHit("APPLE_2021_10K.pdf", 7)
    search = ScriptedSearch({"q": ranked(1, other_year)})

    report = await score([question("q")], search, with_filters=False)

    assert report.overall.hit_at_k == 0.0


async def test_a_document_given_as_a_path_matches_its_file_name() -> None:
    as_path = RankedHit("filings/AAPL/apple_2022_10k.pdf", 7)
    search = ScriptedSearch({"q": ranked(2, as_path)})

    report = await score([question("q")], search, with_filters=True)

    assert report.outcomes[0].rank == 2


async def test_a_chunk_running_over_the_evidence_page_is_a_hit() -> None:
    search = ScriptedSearch({"q": ranked(1, RankedHit("APPLE_2022_10K.pdf", 6, page_end=8))})

    report = await score([question("q")], search, with_filters=True)

    assert report.overall.hit_at_1 == 1.0


async def test_any_of_several_evidence_pages_is_a_hit() -> None:
    search = ScriptedSearch({"q": ranked(4, RankedHit("APPLE_2022_10K.pdf", 40))})

    report = await score([question("q", pages=(32, 40))], search, with_filters=True)

    assert report.outcomes[0].rank == 4


async def test_filters_reach_the_search_only_when_asked_for() -> None:
    search = ScriptedSearch({"q": ranked(1)})

    await score([question("q")], search, with_filters=True)
    assert search.filters["q"] == SearchFilters(
        symbols=("AAPL",), forms=("10-K",), fiscal_year=2022
    )

    await score([question("q")], search, with_filters=False)
    assert search.filters["q"] is None


async def test_metrics_are_reported_per_source_and_overall() -> None:
    questions = [
        question("team hit"),
        question("team miss"),
        question("fb hit", source="financebench"),
    ]
    search = ScriptedSearch({"team hit": ranked(1), "team miss": ranked(None), "fb hit": ranked(2)})

    report = await score(questions, search, with_filters=True)

    assert report.by_source["team"].hit_at_k == 0.5
    assert report.by_source["financebench"].hit_at_1 == 0.0
    assert report.by_source["financebench"].mrr == 0.5
    assert math.isclose(report.overall.hit_at_k, 2 / 3)
    assert math.isclose(report.overall.mrr, (1 + 0 + 0.5) / 3)


async def test_a_failing_search_is_a_miss_that_names_the_error() -> None:
    search = ScriptedSearch({"q": RuntimeError("index not loaded")})

    report = await score([question("q")], search, with_filters=True)

    assert report.overall.errors == 1
    assert report.misses[0].error == "RuntimeError: index not loaded"
    assert "index not loaded" in format_report(report)


async def test_k_outside_the_ranking_depth_is_refused() -> None:
    with pytest.raises(ValueError, match="k must be between 1 and 10"):
        await score([question("q")], ScriptedSearch({}), with_filters=True, k=11)


async def test_table_and_json_show_each_setting_source_and_miss() -> None:
    search = ScriptedSearch({"hit": ranked(1), "missed": ranked(None)})
    questions = [question("hit"), question("missed")]
    reports = [
        await score(questions, search, with_filters=True),
        await score(questions, search, with_filters=False),
    ]

    table = format_report(reports)
    as_json = report_json(reports)

    assert "hit@5" in table and "MRR" in table
    assert re.search(r"with\s+team\s+2\s+50\.0%\s+50\.0%\s+0\.500", table)
    assert re.search(r"without\s+all\s+2\s+50\.0%\s+50\.0%\s+0\.500", table)
    assert "expected APPLE_2022_10K.pdf p.7" in table
    assert json.loads(json.dumps(as_json)) == as_json
    assert [r["with_filters"] for r in as_json["reports"]] == [True, False]
    assert as_json["reports"][0]["misses"][0]["question"] == "missed"
    assert as_json["reports"][0]["meets_target"] is False


def write_financebench(data_dir: Path, rows: list[dict[str, object]]) -> None:
    folder = data_dir / "qa" / "financebench"
    folder.mkdir(parents=True)
    (folder / "financebench_open_source.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows)
    )
    documents = [
        {"doc_name": "ACME_2020_10K", "company": "Acme", "doc_type": "10k", "doc_period": 2020}
    ]
    (folder / "financebench_document_information.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in documents)
    )


async def test_a_run_scores_team_and_financebench_questions_with_and_without_filters(
    tmp_path: Path,
) -> None:
    (tmp_path / "filings" / "ACME").mkdir(parents=True)
    (tmp_path / "filings" / "ACME" / "ACME_2020_10K.pdf").write_bytes(b"%PDF-1.4\n")
    write_financebench(
        tmp_path,
        [
            {
                "question": "made-up question",
                "doc_name": "ACME_2020_10K",
                "evidence": [{"doc_name": "ACME_2020_10K", "evidence_page_num": 4}],
            },
            {"question": "not staged", "doc_name": "OTHER_2020_10K", "evidence": []},
        ],
    )
    team_file = tmp_path / "team.jsonl"
    team_file.write_text(question("team q").model_dump_json() + "\n")
    search = ScriptedSearch(
        {"team q": ranked(1), "made-up question": [RankedHit("ACME_2020_10K.pdf", 5)]}
    )

    reports = await run_retrieval_eval(search, tmp_path, questions_path=team_file)

    assert [r.with_filters for r in reports] == [True, False]
    assert all(r.overall.hit_at_1 == 1.0 for r in reports)
    assert set(reports[0].by_source) == {"team", "financebench"}


def test_financebench_evidence_pages_turn_from_zero_based_into_pdf_pages(tmp_path: Path) -> None:
    (tmp_path / "filings" / "ACME").mkdir(parents=True)
    (tmp_path / "filings" / "ACME" / "ACME_2020_10K.pdf").write_bytes(b"%PDF-1.4\n")
    write_financebench(
        tmp_path,
        [
            {
                "question": "made-up question",
                "doc_name": "ACME_2020_10K",
                "evidence": [
                    {"doc_name": "ACME_2020_10K", "evidence_page_num": 0},
                    {"doc_name": "ACME_2020_10K", "evidence_page_num": 41},
                    {"doc_name": "ACME_2019_10K", "evidence_page_num": 7},
                ],
            }
        ],
    )

    [loaded] = load_financebench_questions(tmp_path)

    assert loaded.pages == (1, 42)
    assert (loaded.symbol, loaded.form, loaded.fiscal_year) == ("ACME", "10-K", 2020)
    assert (loaded.document, loaded.source) == ("ACME_2020_10K.pdf", "financebench")


@pytest.fixture(scope="module")
def page_counts() -> dict[str, int]:
    counts = {}
    for pdf in sorted(shared_data().joinpath("filings").glob("*/*.pdf")):
        with pdfplumber.open(pdf) as document:
            counts[pdf.name] = len(document.pages)
    return counts


def test_the_team_question_file_loads_with_enough_questions() -> None:
    questions = load_team_questions()

    assert len(questions) >= 45
    assert len({q.question for q in questions}) == len(questions)
    assert {q.symbol for q in questions} == {"AAPL", "MSFT"}
    assert all(q.source == "team" and q.form == "10-K" for q in questions)
    assert len({(q.symbol, q.fiscal_year) for q in questions}) >= 10


def test_some_team_questions_are_asked_of_two_years_with_different_evidence() -> None:
    asked: dict[str, set[str]] = defaultdict(set)
    for q in load_team_questions():
        asked[re.sub(r"\b20\d\d\b", "YEAR", q.question)].add(q.document)

    assert sum(len(documents) >= 2 for documents in asked.values()) >= 8


def test_every_team_question_points_at_pages_of_a_staged_filing(
    page_counts: dict[str, int],
) -> None:
    for q in load_team_questions():
        path = shared_data_dir() / "filings" / q.symbol / q.document
        assert path.is_file(), q.document
        assert q.fiscal_year == int(re.findall(r"\d{4}", q.document)[0]), q.question
        assert all(1 <= page <= page_counts[q.document] for page in q.pages), q.question


def test_financebench_questions_are_found_for_every_staged_pdf_they_use() -> None:
    data_dir = shared_data()

    questions = load_financebench_questions(data_dir)

    assert sorted(q.document for q in questions) == [
        "AMAZON_2017_10K.pdf",
        "AMAZON_2017_10K.pdf",
        "AMAZON_2019_10K.pdf",
        "MICROSOFT_2016_10K.pdf",
        "MICROSOFT_2023_10K.pdf",
    ]
    assert {q.symbol for q in questions} == {"AMZN", "MSFT"}
    assert all(q.form == "10-K" and q.source == "financebench" for q in questions)
    assert all(str(q.fiscal_year) in q.document for q in questions)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]{4,}|\d[\d,.]*", text.lower()))


def _overlap(pdf: pdfplumber.PDF, number: int, words: set[str]) -> float:
    """Jaccard overlap of a PDF page's words (1-based page) with the given words."""
    got = _words(pdf.pages[number - 1].extract_text() or "")
    return len(got & words) / max(len(got | words), 1)


def test_financebench_evidence_text_is_on_the_converted_page(page_counts: dict[str, int]) -> None:
    data_dir = shared_data()
    rows = [
        json.loads(line)
        for line in (data_dir / "qa" / "financebench" / "financebench_open_source.jsonl")
        .read_text()
        .splitlines()
        if line.strip()
    ]
    full_pages = {
        (row["doc_name"] + ".pdf", evidence["evidence_page_num"] + 1): evidence[
            "evidence_text_full_page"
        ]
        for row in rows
        for evidence in row["evidence"]
    }

    for q in load_financebench_questions(data_dir):
        path = data_dir / "filings" / q.symbol / q.document
        with pdfplumber.open(path) as pdf:
            for page in q.pages:
                words = _words(full_pages[(q.document, page)])
                here = _overlap(pdf, page, words)
                neighbours = [n for n in (page - 1, page + 1) if 1 <= n <= len(pdf.pages)]
                assert here > 0.5, (q.document, page, here)
                assert all(here > _overlap(pdf, n, words) for n in neighbours), (q.document, page)
