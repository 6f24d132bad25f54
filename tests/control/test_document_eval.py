"""`finq eval documents`: the team's questions about what filings say, and how answers to
them are scored (every expected string in the answer; hit@k of an expected page among the
passages the answer was made from), per split."""

from __future__ import annotations

from collections import Counter

from services.control.document_eval import (
    OUTSIDE_FILE,
    QUESTIONS_FILE,
    AnsweredQuestion,
    DocumentQuestion,
    format_document_report,
    load_document_questions,
    missing_answers,
    score_documents,
)
from services.control.retrieval_eval import RankedHit

FILINGS = {
    "aapl-10-k-2024-11-01.html",
    "googl-10-k-2025-02-05.html",
    "APPLE_2019_10K.pdf",
    "APPLE_2020_10K.pdf",
    "APPLE_2021_10K.pdf",
    "APPLE_2022_10K.pdf",
}


def test_the_question_file_is_half_held_out_over_the_filings_it_names() -> None:
    questions = load_document_questions(QUESTIONS_FILE)

    assert len(questions) >= 30
    assert Counter(q.split for q in questions) == {"dev": 22, "heldout": 22}
    assert {q.document for q in questions} == FILINGS
    assert len({q.id for q in questions}) == len(questions)
    assert {q.kind for q in questions} == {"prose", "table"}
    assert len(load_document_questions(split="heldout")) == 22


def test_the_outside_split_covers_statements_cells_prose_arithmetic_and_yes_or_no() -> None:
    outside = load_document_questions(OUTSIDE_FILE)

    assert len(outside) == 50 and {q.split for q in outside} == {"outside"}
    assert Counter(q.kind for q in outside) == {"table": 42, "prose": 8}
    assert {q.symbol for q in outside} == {"AAPL", "AMZN", "GOOGL", "MSFT", "NVDA"}
    # Its ids stand apart from the team's, so a report names each question once.
    assert not {q.id for q in outside} & {q.id for q in load_document_questions(QUESTIONS_FILE)}


def test_an_answer_must_hold_every_expected_string_in_any_case_and_spacing() -> None:
    answer = (
        'It said: "the total amount of gross unrecognized tax benefits … Uncertain\nTax Positions"'
    )

    assert missing_answers(answer, ["uncertain tax positions"]) == ()
    assert missing_answers("Paid clicks change | 5% |", ["Paid clicks change", "7%"]) == ("7%",)
    assert missing_answers("The Company’s auditor since 2009", ["Company's auditor"]) == ()


def question(number: int, split: str, page: int = 6) -> DocumentQuestion:
    return DocumentQuestion(
        id=f"q{number}",
        question=f"How many employees, question {number}?",
        symbol="AAPL",
        form="10-K",
        fiscal_year=2024,
        document="aapl-10-k-2024-11-01.html",
        pages=(page,),
        answers=("164,000",),
        kind="prose",
        split=split,  # type: ignore[arg-type]
    )


async def test_accuracy_and_page_hits_are_reported_per_split() -> None:
    questions = [question(1, "dev"), question(2, "dev"), question(3, "heldout")]

    async def answer(q: DocumentQuestion) -> AnsweredQuestion:
        if q.id == "q2":
            raise RuntimeError("search failed")
        hits = (
            RankedHit("aapl-10-k-2024-11-01.html", 40),
            RankedHit("aapl-10-k-2024-11-01.html", 6),
        )
        said = "approximately 164,000 full-time equivalent employees" if q.id == "q1" else "no"
        return AnsweredQuestion(said, hits, grounded=True)

    report = await score_documents(questions, answer, k=5)

    dev, heldout = report.by_split["dev"], report.by_split["heldout"]
    assert (dev.questions, dev.accuracy, dev.hit_at_1, dev.hit_at_k, dev.errors) == (
        2,
        0.5,
        0.0,
        0.5,
        1,
    )
    assert (heldout.accuracy, heldout.hit_at_k) == (0.0, 1.0)
    assert [o.question.id for o in report.wrong] == ["q2", "q3"]
    text = format_document_report(report)
    assert "[dev q2]" in text and "error RuntimeError: search failed" in text
    assert "[heldout q3]" in text and "lacks ['164,000']; page found at rank 2" in text
