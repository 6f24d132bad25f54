"""`finq eval`: the team's golden questions through the live pipeline, scored.

Each golden question says what it must get: the intent, the tools, the arguments that
matter, and the answer — figures (found among the answer's facts, within tolerance, under
the right company, metric and period), a clarifying question, a refusal, a "no data" answer
naming what is missing, and so on. Follow-ups share a `conversation` and are asked in
order in one conversation; everything else is asked concurrently.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

GOLDEN_FILE = Path(__file__).resolve().parent / "golden_questions.jsonl"
LATENCY_BUDGET_MS = 5000.0
# A figure matches when within this share of the expected value (answers show 4 digits).
FIGURE_TOLERANCE = 0.0005

Expect = Literal["figures", "answer", "no_data", "clarify", "refusal", "not_yet", "no_passage"]


class ExpectedFigure(BaseModel):
    model_config = ConfigDict(extra="forbid")

    symbol: str
    metric: str
    period: str  # "FY2023", "Q1 FY2024"
    value: float


class GoldenQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    question: str
    intent: str
    expect: Expect
    conversation: str | None = None
    tools: list[str] = Field(default_factory=list)
    arguments: dict[str, Any] = Field(default_factory=dict)
    figures: list[ExpectedFigure] = Field(default_factory=list)
    contains: list[str] = Field(default_factory=list)


def load_golden(path: Path = GOLDEN_FILE) -> list[GoldenQuestion]:
    lines = path.read_text().splitlines()
    return [GoldenQuestion.model_validate_json(line) for line in lines if line.strip()]


@dataclass
class Outcome:
    golden: GoldenQuestion
    body: dict[str, Any] | None
    latency_ms: float
    error: str | None = None


@dataclass
class Score:
    intent: bool
    tools: bool
    arguments: bool | None  # None when the question names no arguments to check
    answer: bool
    grounded: bool
    clarification: bool
    problems: list[str] = field(default_factory=list)


def _same(expected: Any, got: Any, key: str) -> bool:
    if key in {"symbols", "metrics"} and isinstance(expected, list) and isinstance(got, list):
        return sorted(expected) == sorted(got)
    return bool(expected == got)


def _figure_found(figure: ExpectedFigure, facts: list[dict[str, Any]]) -> bool:
    for fact in facts:
        if (fact["symbol"], fact["metric"], fact["period"]) != (
            figure.symbol,
            figure.metric,
            figure.period,
        ):
            continue
        allowed = max(abs(figure.value) * FIGURE_TOLERANCE, 1e-9)
        if math.isclose(fact["value"], figure.value, abs_tol=allowed):
            return True
    return False


def score(outcome: Outcome) -> Score:
    golden, body = outcome.golden, outcome.body
    if body is None:
        problem = f"no answer: {outcome.error}"
        return Score(
            False, False, False if golden.arguments else None, False, False, False, [problem]
        )
    route = body.get("route") or {}
    calls = route.get("tool_calls", [])
    problems: list[str] = []

    intent_ok = route.get("intent") == golden.intent
    if not intent_ok:
        problems.append(f"intent {route.get('intent')!r}, expected {golden.intent!r}")
    tools = sorted({call["tool"] for call in calls})
    tools_ok = tools == sorted(set(golden.tools))
    if not tools_ok:
        problems.append(f"tools {tools}, expected {sorted(set(golden.tools))}")
    arguments_ok: bool | None = None
    if golden.arguments:
        got = calls[0]["arguments"] if calls else {}
        wrong = [
            f"{key}={got.get(key)!r} (expected {value!r})"
            for key, value in golden.arguments.items()
            if not _same(value, got.get(key), key)
        ]
        arguments_ok = not wrong
        if wrong:
            problems.append("arguments " + ", ".join(wrong))

    answer = body.get("answer", "")
    needs = bool(body.get("needs_clarification"))
    missing_text = [text for text in golden.contains if text not in answer]
    if missing_text:
        problems.append(f"answer lacks {missing_text}")
    answer_ok = not missing_text
    if golden.expect == "figures":
        absent = [f for f in golden.figures if not _figure_found(f, body.get("facts", []))]
        if absent:
            problems.append(
                "figures not in the answer's facts: "
                + ", ".join(f"{f.symbol} {f.metric} {f.period} {f.value:g}" for f in absent)
            )
        answer_ok = answer_ok and not absent and not needs
    elif golden.expect == "clarify":
        answer_ok = answer_ok and needs and bool(body.get("clarifying_question"))
    elif golden.expect == "refusal":
        answer_ok = answer_ok and not calls and answer.startswith("That is outside what finq")
    elif golden.expect == "not_yet":
        answer_ok = answer_ok and not calls and "not answered yet" in answer
    elif golden.expect == "no_passage":
        # The golden pipeline loads no filings: the answer says so and cites nothing.
        answer_ok = answer_ok and answer.startswith("No passage was found")
    elif golden.expect == "no_data":
        answer_ok = (
            answer_ok and not needs and ("No figure is held" in answer or "No data" in answer)
        )
    else:
        answer_ok = answer_ok and not needs
    if not answer_ok and not problems:
        problems.append(f"answer {answer[:160]!r}")

    validation = body.get("validation") or {}
    # Grounded: passed as written. A template answer the validator had to repair passed
    # only after a figure was patched or withheld, which is a fault of the answerer.
    grounded = (
        bool(validation.get("passed"))
        and not validation.get("issues")
        and not validation.get("repairs")
    )
    if not grounded:
        problems.append(
            f"validation {validation.get('severity')}: {validation.get('issues')} "
            f"repairs {validation.get('repairs')}"
        )
    clarification_ok = needs == (golden.expect == "clarify")
    return Score(intent_ok, tools_ok, arguments_ok, answer_ok, grounded, clarification_ok, problems)


async def _ask(
    client: httpx.AsyncClient, golden: GoldenQuestion, conversation_id: str | None
) -> Outcome:
    started = time.perf_counter()
    try:
        response = await client.post(
            "/v1/ask", json={"question": golden.question, "conversation_id": conversation_id}
        )
    except httpx.HTTPError as error:
        return Outcome(golden, None, (time.perf_counter() - started) * 1000, repr(error))
    latency = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        return Outcome(golden, None, latency, f"HTTP {response.status_code}: {response.text[:200]}")
    return Outcome(golden, response.json(), latency)


async def run_golden(
    url: str, questions: list[GoldenQuestion], concurrency: int = 4, http_timeout: float = 60.0
) -> list[Outcome]:
    """Ask every question; a conversation's turns in order, in one conversation."""
    groups: dict[str, list[GoldenQuestion]] = defaultdict(list)
    for golden in questions:
        groups[golden.conversation or f"single:{golden.id}"].append(golden)
    gate = asyncio.Semaphore(concurrency)
    outcomes: dict[str, Outcome] = {}

    async def run_group(turns: list[GoldenQuestion]) -> None:
        async with gate:
            conversation_id: str | None = None
            for golden in turns:
                outcome = await _ask(client, golden, conversation_id)
                outcomes[golden.id] = outcome
                if outcome.body is not None:
                    conversation_id = outcome.body.get("conversation_id")

    async with httpx.AsyncClient(base_url=url, timeout=http_timeout) as client:
        await asyncio.gather(*(run_group(turns) for turns in groups.values()))
    return [outcomes[golden.id] for golden in questions]


def _rate(values: list[bool]) -> float:
    return round(sum(values) / len(values), 4) if values else 1.0


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))
    return round(ordered[index], 1)


def build_report(outcomes: list[Outcome]) -> dict[str, Any]:
    scores = [score(outcome) for outcome in outcomes]
    latencies = [o.latency_ms for o in outcomes if o.body is not None]
    per_intent: dict[str, dict[str, Any]] = {}
    by_intent: dict[str, list[Score]] = defaultdict(list)
    for outcome, result in zip(outcomes, scores, strict=True):
        by_intent[outcome.golden.intent].append(result)
    for intent, results in sorted(by_intent.items()):
        per_intent[intent] = {
            "questions": len(results),
            "intent_accuracy": _rate([r.intent for r in results]),
            "answer_correctness": _rate([r.answer for r in results]),
        }
    clarify = [
        r.clarification
        for o, r in zip(outcomes, scores, strict=True)
        if o.golden.expect == "clarify"
    ]
    return {
        "questions": len(outcomes),
        "conversations": len({o.golden.conversation for o in outcomes if o.golden.conversation}),
        "intent_accuracy": _rate([r.intent for r in scores]),
        "tool_selection_accuracy": _rate([r.tools for r in scores]),
        "argument_accuracy": _rate([r.arguments for r in scores if r.arguments is not None]),
        "answer_correctness": _rate([r.answer for r in scores]),
        "grounding_rate": _rate([r.grounded for r in scores]),
        "clarification_correctness": _rate(clarify),
        "clarification_on_other_questions": _rate(
            [
                r.clarification
                for o, r in zip(outcomes, scores, strict=True)
                if o.golden.expect != "clarify"
            ]
        ),
        "latency_ms": {
            "p50": _percentile(latencies, 0.5),
            "p95": _percentile(latencies, 0.95),
            "max": _percentile(latencies, 1.0),
            "budget": LATENCY_BUDGET_MS,
            "within_budget": _rate([latency <= LATENCY_BUDGET_MS for latency in latencies]),
        },
        "per_intent": per_intent,
        "failures": [
            {
                "id": o.golden.id,
                "question": o.golden.question,
                "expected_intent": o.golden.intent,
                "got_intent": (o.body or {}).get("route", {}).get("intent"),
                "problems": r.problems,
                "answer": (o.body or {}).get("answer", o.error),
            }
            for o, r in zip(outcomes, scores, strict=True)
            if r.problems
        ],
    }


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"{report['questions']} questions ({report['conversations']} conversations)",
        f"  intent accuracy            {report['intent_accuracy']:.1%}",
        f"  tool selection accuracy    {report['tool_selection_accuracy']:.1%}",
        f"  argument accuracy          {report['argument_accuracy']:.1%}",
        f"  answer correctness         {report['answer_correctness']:.1%}",
        f"  grounding rate             {report['grounding_rate']:.1%}",
        f"  clarification correctness  {report['clarification_correctness']:.1%}",
        f"  latency p50 {report['latency_ms']['p50']:.0f} ms, p95 {report['latency_ms']['p95']:.0f}"
        f" ms (budget {report['latency_ms']['budget']:.0f} ms,"
        f" {report['latency_ms']['within_budget']:.1%} within)",
        "  per intent (intent accuracy / answer correctness):",
    ]
    for intent, figures in report["per_intent"].items():
        lines.append(
            f"    {intent:20} {figures['questions']:4}  {figures['intent_accuracy']:.1%}"
            f" / {figures['answer_correctness']:.1%}"
        )
    if report["failures"]:
        lines.append(f"  {len(report['failures'])} questions with problems:")
        for failure in report["failures"]:
            lines.append(
                f"    {failure['id']} {failure['question']!r}: " + "; ".join(failure["problems"])
            )
    return "\n".join(lines)


def write_report(report: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
