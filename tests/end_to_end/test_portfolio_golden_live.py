"""The golden portfolio questions (g184-g191) through the live pipeline: routed to the
portfolio intents and tools, answered rather than told "not answered yet", and grounded."""

from __future__ import annotations

import pytest

from services.control.evaluation import load_split, run_golden, score
from tests.conftest import RunningFinq

pytestmark = pytest.mark.e2e

PORTFOLIO_GOLDEN = {f"g{number}" for number in range(184, 192)}


async def test_the_golden_portfolio_questions_are_answered(finq: RunningFinq) -> None:
    questions = [q for q in load_split("dev") if q.id in PORTFOLIO_GOLDEN]
    assert {q.id for q in questions} == PORTFOLIO_GOLDEN
    outcomes = await run_golden(finq.url, questions, warm=False)
    problems = {}
    for outcome in outcomes:
        result = score(outcome)
        assert outcome.body is not None
        print(outcome.golden.id, outcome.golden.question, "->", outcome.body["answer"][:200])
        if not (result.intent and result.tools and result.answer and result.grounded):
            problems[outcome.golden.id] = result.problems
    assert not problems, problems
