"""`finq eval`: the team's golden questions through the live pipeline, scored.

Each golden question says what it must get: the intent, the tools, the arguments that
matter, and the answer — figures (each stated in the answer's text or its table with its
value to the precision shown, and, for a catalog metric, found among the answer's facts
under the right company, metric and period), a clarifying question, a refusal, a "no data"
answer naming what is missing, an "uncovered" answer that shows no figure for a question
stored figures cannot answer, and so on. Follow-ups share a `conversation` and are asked
in order in one conversation; everything else is asked concurrently.

The questions come in three splits. "dev" (`golden_questions.jsonl`) is what the rules are
tuned against: the original questions (ids g…, the ones the README's figures were tuned
on) and later ones. "heldout" (`golden_questions_heldout.jsonl`) was written by someone who
never read the rules, and nobody tunes rules against it: its figure is the honest estimate
of how finq does on questions nobody has seen. "outside" (`golden_questions_outside.jsonl`,
absent until its questions are supplied) is written from outside the project, in words
nobody on it chose.

Every question is asked as the demo user (shared/portfolio/demo.py) when its key is given:
the outside writers were told whose portfolio "my" questions ask about, so a question about
"my IRA" is scored against the demo accounts, not against an empty book.

`eval_levels.json` holds each split's measured figures (`finq eval --write-levels`); the
live test fails when a split falls more than a point below its level, so a level is only
ever measured, never typed in.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, model_validator

from services.control.progress import Progress, Step
from services.control.stated_figures import StatedNumber, shown_text, stated_numbers
from shared.metric_catalog import METRICS_BY_ID

GOLDEN_FILE = Path(__file__).resolve().parent / "golden_questions.jsonl"
HELDOUT_FILE = Path(__file__).resolve().parent / "golden_questions_heldout.jsonl"
OUTSIDE_FILE = Path(__file__).resolve().parent / "golden_questions_outside.jsonl"
LEVELS_FILE = Path(__file__).resolve().parent / "eval_levels.json"
LATENCY_BUDGET_MS = 5000.0
# How often a question refused for the asking user's rate is asked again, after the wait the
# gateway's Retry-After names.
RATE_LIMITED_ATTEMPTS = 20
# A figure matches when within this share of the expected value (answers show 4 digits).
FIGURE_TOLERANCE = 0.0005

Expect = Literal["figures", "answer", "no_data", "clarify", "refusal", "no_passage", "uncovered"]
Split = Literal["dev", "heldout", "outside"]
SPLITS: tuple[Split, ...] = ("dev", "heldout", "outside")
SPLIT_FILES: dict[Split, Path] = {
    "dev": GOLDEN_FILE,
    "heldout": HELDOUT_FILE,
    "outside": OUTSIDE_FILE,
}
Unit = Literal["USD", "USD/share", "%", "x", "days", "shares"]
# The questions the rules were tuned against before the held-out split existed.
TUNED_ID_PREFIX = "g"

# "No passage was found …", or "No passage about “<topic>” was found …".
_NO_PASSAGE = re.compile(r"No passage (?:about “[^”]*” )?was found")


class ExpectedFigure(BaseModel):
    """A figure the answer must state. With a catalog `metric` it must also be among the
    answer's facts under `symbol`, `metric` and `period`; without one it is computed (a
    difference between years, a sum across companies) and need only be stated, with the
    right value. A decrease is a negative value: "fell by $1.2 billion" states -1.2e9."""

    model_config = ConfigDict(extra="forbid")

    symbol: str | None = None
    metric: str | None = None
    period: str | None = None  # "FY2023", "Q1 FY2024"; for a computed figure, a note
    value: float
    # The value's unit, so a percentage is never read as dollars; a catalog metric's own
    # unit when not given.
    unit: Unit | None = None

    @model_validator(mode="after")
    def _a_metric_names_its_fact(self) -> ExpectedFigure:
        if self.metric is not None and (self.symbol is None or self.period is None):
            raise ValueError(f"figure {self.metric!r} needs its symbol and period")
        return self

    @property
    def value_unit(self) -> str | None:
        if self.unit is not None:
            return self.unit
        metric = METRICS_BY_ID.get(self.metric) if self.metric else None
        return metric.unit if metric else None

    def describe(self) -> str:
        named = " ".join(part for part in (self.symbol, self.metric, self.period) if part)
        return f"{named or 'computed'} {self.value:g}"


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
    split: Split = "dev"
    # What the question exercises ("dates", "scoped_figures", …), reported per topic.
    topic: str | None = None

    @property
    def tuned(self) -> bool:
        """Whether the rules were tuned against this question before the splits existed."""
        return self.id.startswith(TUNED_ID_PREFIX)


def load_golden(path: Path = GOLDEN_FILE) -> list[GoldenQuestion]:
    lines = path.read_text().splitlines()
    return [GoldenQuestion.model_validate_json(line) for line in lines if line.strip()]


def _load_split_file(path: Path) -> list[GoldenQuestion]:
    # A split whose questions are not written yet (the outside one) is an empty split.
    return load_golden(path) if path.exists() else []


def load_split(
    split: Split | Literal["all"] = "all", files: dict[Split, Path] = SPLIT_FILES
) -> list[GoldenQuestion]:
    """The bundled questions of one split, or of every one (in SPLITS' order); a split's
    missing file is a split of no questions.

    Each file holds only its own split: a held-out question filed among the dev ones would
    be tuned against, so that is an error, not a choice."""
    chosen = SPLITS if split == "all" else (split,)
    questions: list[GoldenQuestion] = []
    for name in chosen:
        if name not in files:
            continue
        loaded = _load_split_file(files[name])
        strays = [q.id for q in loaded if q.split != name]
        if strays:
            raise ValueError(f"{files[name].name} holds questions of another split: {strays}")
        questions.extend(loaded)
    return questions


def load_questions(
    split: Split | Literal["all"] = "all", path: Path | None = None
) -> list[GoldenQuestion]:
    """`finq eval`'s questions: a file's (`--golden`) of the split asked, or the bundled ones."""
    if path is None:
        return load_split(split)
    return [q for q in load_golden(path) if split == "all" or q.split == split]


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
    # Facts shown for a figure or uncovered question while the text states none of the
    # figures asked: an answer to some other question, passed off as this one's.
    for_another_question: bool = False


def _same(expected: Any, got: Any, key: str) -> bool:
    if key in {"symbols", "metrics"} and isinstance(expected, list) and isinstance(got, list):
        return sorted(expected) == sorted(got)
    return bool(expected == got)


def period_key(period: str) -> str:
    """A period label as both spellings of a trailing twelve months read: the tools write
    "TTM to Q1 FY2026", a question's writer may write "TTM Q1 FY2026"."""
    return period.replace("TTM to ", "TTM ")


def _same_period(expected: str, got: str) -> bool:
    """A fiscal year's closing balance is also its fourth quarter's: "as of" the year-end
    date may be read either way. A flow differs between the two, so the value still tells."""
    return period_key(expected).removeprefix("Q4 ") == period_key(got).removeprefix("Q4 ")


def _figure_found(figure: ExpectedFigure, facts: list[dict[str, Any]]) -> bool:
    """Whether the catalog figure is among the answer's facts: fetched, as the text says."""
    for fact in facts:
        if (fact["symbol"], fact["metric"]) != (figure.symbol, figure.metric):
            continue
        if not _same_period(figure.period, str(fact["period"])):
            continue
        allowed = max(abs(figure.value) * FIGURE_TOLERANCE, 1e-9)
        if math.isclose(fact["value"], figure.value, abs_tol=allowed):
            return True
    return False


def _figure_stated(figure: ExpectedFigure, numbers: list[StatedNumber]) -> bool:
    """Whether the answer's text or table states the figure, to the precision it shows."""
    unit = figure.value_unit
    return any(number.states(figure.value, unit) for number in numbers)


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
    # The lead and the table beneath it: a figure or a name shown in either is said.
    shown = shown_text(body)
    needs = bool(body.get("needs_clarification"))
    validation = body.get("validation") or {}
    if golden.expect == "uncovered":
        # It must name what was asked, in whatever case the reply writes it.
        missing_text = [text for text in golden.contains if text.lower() not in shown.lower()]
    else:
        missing_text = [text for text in golden.contains if text not in shown]
    if missing_text:
        problems.append(f"answer lacks {missing_text}")
    answer_ok = not missing_text
    facts = body.get("facts") or []
    for_another = False
    if golden.expect == "figures":
        numbers = stated_numbers(shown)
        unstated = [f for f in golden.figures if not _figure_stated(f, numbers)]
        if unstated:
            problems.append(
                "figures not stated in the answer: " + ", ".join(f.describe() for f in unstated)
            )
        absent = [f for f in golden.figures if f.metric and not _figure_found(f, facts)]
        if absent:
            problems.append(
                "figures not in the answer's facts: " + ", ".join(f.describe() for f in absent)
            )
        answer_ok = answer_ok and not unstated and not absent and not needs
        # A question that names no figure (a trend of "the last four quarters") has none
        # the text could miss.
        for_another = bool(facts) and bool(golden.figures) and len(unstated) == len(golden.figures)
    elif golden.expect == "clarify":
        answer_ok = answer_ok and needs and bool(body.get("clarifying_question"))
    elif golden.expect == "refusal":
        answer_ok = answer_ok and not calls and answer.startswith("That is outside what finq")
    elif golden.expect == "no_passage":
        # The golden pipeline loads no filings: the answer says so and cites nothing.
        answer_ok = answer_ok and bool(_NO_PASSAGE.match(answer))
    elif golden.expect == "no_data":
        answer_ok = (
            answer_ok and not needs and ("No figure is held" in answer or "No data" in answer)
        )
    elif golden.expect == "uncovered":
        # Stored figures cannot answer it (a segment, a product line, a filing's text): any
        # figure shown would be a company total or another figure passed off as the answer.
        if facts:
            problems.append(
                "figures shown for a question they cannot answer: "
                + ", ".join(f"{f['symbol']} {f['metric']} {f['period']}" for f in facts[:4])
            )
        answer_ok = answer_ok and not facts and bool(validation.get("passed"))
        for_another = bool(facts)
    else:
        answer_ok = answer_ok and not needs
    if not answer_ok and not problems:
        problems.append(f"answer {answer[:160]!r}")

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
    return Score(
        intent_ok,
        tools_ok,
        arguments_ok,
        answer_ok,
        grounded,
        clarification_ok,
        problems,
        for_another,
    )


async def _ask(
    client: httpx.AsyncClient, golden: GoldenQuestion, conversation_id: str | None
) -> Outcome:
    for _ in range(RATE_LIMITED_ATTEMPTS):
        started = time.perf_counter()
        try:
            # The client carries the asking user's key, when there is one.
            response = await client.post(
                "/v1/ask", json={"question": golden.question, "conversation_id": conversation_id}
            )
        except httpx.HTTPError as error:
            return Outcome(golden, None, (time.perf_counter() - started) * 1000, repr(error))
        if response.status_code != 429:
            break
        # A keyed user is rate limited; the question is asked again when the gateway says
        # it may be, as any client should, and its latency counts from then.
        await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
    latency = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        return Outcome(golden, None, latency, f"HTTP {response.status_code}: {response.text[:200]}")
    return Outcome(golden, response.json(), latency)


# A figure question and a document question: between them every stage's lazily loaded model
# (the router's MiniLM and classifier, the tools' embedder) is loaded.
WARM_UP_QUESTIONS = (
    "What was Apple's revenue in fiscal 2023?",
    "What did Apple say about supply-chain risk in its 2022 10-K?",
)
WARM_UP_ATTEMPTS = 4


async def warm_up(client: httpx.AsyncClient) -> None:
    """Ask the warm-up questions, unscored, until each is answered (or a few tries).

    A freshly started pipeline loads its models at the first questions; on a busy machine
    that outlasts the gateway's deadline, and the first golden questions would be scored as
    504s for a load that has nothing to do with them."""
    for question in WARM_UP_QUESTIONS:
        for _ in range(WARM_UP_ATTEMPTS):
            try:
                response = await client.post(
                    "/v1/ask", json={"question": question, "conversation_id": None}
                )
            except httpx.HTTPError:
                continue
            if response.status_code == 200:
                break


async def run_golden(
    url: str,
    questions: list[GoldenQuestion],
    concurrency: int = 4,
    http_timeout: float = 60.0,
    warm: bool = True,
    progress: Progress | None = None,
    key: str | None = None,
) -> list[Outcome]:
    """Ask every question, after the warm-up (`warm`); a conversation's turns in order, in
    one conversation. `progress` counts the questions answered and the answers right; `key`
    is the API key of the user who asks (the demo user's), none for the local user."""
    progress = progress or Progress.silent()
    right = 0
    groups: dict[str, list[GoldenQuestion]] = defaultdict(list)
    for golden in questions:
        groups[golden.conversation or f"single:{golden.id}"].append(golden)
    gate = asyncio.Semaphore(concurrency)
    outcomes: dict[str, Outcome] = {}

    async def run_group(turns: list[GoldenQuestion], asked: Step) -> None:
        nonlocal right
        async with gate:
            conversation_id: str | None = None
            for golden in turns:
                outcome = await _ask(client, golden, conversation_id)
                outcomes[golden.id] = outcome
                right += score(outcome).answer
                asked.done(golden.id, f"answers right so far {right}/{asked.done_count + 1}")
                if outcome.body is not None:
                    conversation_id = outcome.body.get("conversation_id")

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(base_url=url, timeout=http_timeout, headers=headers) as client:
        if warm:
            with progress.waiting("warming up the pipeline (the stages load their models)"):
                await warm_up(client)
        with progress.step("asking the golden questions", total=len(questions)) as asked:
            await asyncio.gather(*(run_group(turns, asked) for turns in groups.values()))
    return [outcomes[golden.id] for golden in questions]


def _rate(values: list[bool]) -> float:
    return round(sum(values) / len(values), 4) if values else 1.0


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))
    return round(ordered[index], 1)


def _rates(results: list[Score]) -> dict[str, Any]:
    return {
        "questions": len(results),
        "intent_accuracy": _rate([r.intent for r in results]),
        "answer_correctness": _rate([r.answer for r in results]),
    }


def _section(scored: list[tuple[Outcome, Score]], with_failures: bool = True) -> dict[str, Any]:
    """Every metric of one group of questions (a split, or all of them)."""
    scores = [result for _, result in scored]
    latencies = [o.latency_ms for o, _ in scored if o.body is not None]
    by_intent: dict[str, list[Score]] = defaultdict(list)
    by_topic: dict[str, list[Score]] = defaultdict(list)
    for outcome, result in scored:
        by_intent[outcome.golden.intent].append(result)
        if outcome.golden.topic:
            by_topic[outcome.golden.topic].append(result)
    section: dict[str, Any] = {
        "questions": len(scored),
        "conversations": len({o.golden.conversation for o, _ in scored if o.golden.conversation}),
        "intent_accuracy": _rate([r.intent for r in scores]),
        "tool_selection_accuracy": _rate([r.tools for r in scores]),
        "argument_accuracy": _rate([r.arguments for r in scores if r.arguments is not None]),
        "answer_correctness": _rate([r.answer for r in scores]),
        "grounding_rate": _rate([r.grounded for r in scores]),
        "clarification_correctness": _rate(
            [r.clarification for o, r in scored if o.golden.expect == "clarify"]
        ),
        "clarification_on_other_questions": _rate(
            [r.clarification for o, r in scored if o.golden.expect != "clarify"]
        ),
        "figures_for_another_question": sum(r.for_another_question for r in scores),
        "latency_ms": {
            "p50": _percentile(latencies, 0.5),
            "p95": _percentile(latencies, 0.95),
            "max": _percentile(latencies, 1.0),
            "budget": LATENCY_BUDGET_MS,
            "within_budget": _rate([latency <= LATENCY_BUDGET_MS for latency in latencies]),
        },
        "per_intent": {intent: _rates(results) for intent, results in sorted(by_intent.items())},
        "per_topic": {topic: _rates(results) for topic, results in sorted(by_topic.items())},
    }
    if with_failures:
        section["failures"] = [
            {
                "id": o.golden.id,
                "question": o.golden.question,
                "expected_intent": o.golden.intent,
                "got_intent": (o.body or {}).get("route", {}).get("intent"),
                "problems": r.problems,
                "answer": (o.body or {}).get("answer", o.error),
            }
            for o, r in scored
            if r.problems
        ]
    return section


def build_report(outcomes: list[Outcome]) -> dict[str, Any]:
    """A section per split asked (`splits`), and `all` of them together when both were."""
    scored = [(outcome, score(outcome)) for outcome in outcomes]
    splits = {
        name: _section([(o, r) for o, r in scored if o.golden.split == name])
        for name in SPLITS
        if any(o.golden.split == name for o in outcomes)
    }
    report: dict[str, Any] = {"questions": len(outcomes), "splits": splits}
    if len(splits) > 1:
        report["all"] = _section(scored, with_failures=False)
    return report


_ROWS: tuple[tuple[str, str], ...] = (
    ("intent accuracy", "intent_accuracy"),
    ("tool selection accuracy", "tool_selection_accuracy"),
    ("argument accuracy", "argument_accuracy"),
    ("answer correctness", "answer_correctness"),
    ("grounding rate", "grounding_rate"),
    ("clarification correctness", "clarification_correctness"),
)


def _columns(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    columns = dict(report["splits"])
    if "all" in report:
        columns["all"] = report["all"]
    return columns


def _grouped_rows(columns: dict[str, dict[str, Any]], key: str) -> list[str]:
    """Per intent or per topic: questions, intent accuracy / answer correctness, by split."""
    names = sorted({name for section in columns.values() for name in section[key]})
    lines: list[str] = []
    for name in names:
        cells = []
        for section in columns.values():
            figures = section[key].get(name)
            cells.append(
                f"{figures['questions']:4} {figures['intent_accuracy']:6.1%} / "
                f"{figures['answer_correctness']:6.1%}"
                if figures
                else f"{'':4} {'-':>6}   {'-':>6}"
            )
        lines.append(f"    {name:22}" + "  ".join(f"{cell:>21}" for cell in cells))
    return lines


def format_report(report: dict[str, Any]) -> str:
    """Every metric per split side by side, per intent and per topic, then each split's
    failures."""
    columns = _columns(report)
    header = f"  {'':28}" + "".join(f"{name:>10}" for name in columns)
    lines = [
        "; ".join(
            f"{name}: {section['questions']} questions ({section['conversations']} conversations)"
            for name, section in report["splits"].items()
        ),
        header,
        f"  {'questions':28}" + "".join(f"{s['questions']:>10}" for s in columns.values()),
    ]
    for label, key in _ROWS:
        lines.append(f"  {label:28}" + "".join(f"{s[key]:>10.1%}" for s in columns.values()))
    lines.append(
        f"  {'figures for another question':28}"
        + "".join(f"{s['figures_for_another_question']:>10}" for s in columns.values())
    )
    for label, key in (("latency p50 ms", "p50"), ("latency p95 ms", "p95")):
        lines.append(
            f"  {label:28}" + "".join(f"{s['latency_ms'][key]:>10.0f}" for s in columns.values())
        )
    lines.append(
        f"  {'within budget':28}"
        + "".join(f"{s['latency_ms']['within_budget']:>10.1%}" for s in columns.values())
        + f"  ({LATENCY_BUDGET_MS:.0f} ms)"
    )
    cell_header = f"  {'':24}" + "  ".join(f"{name:>21}" for name in columns)
    lines += ["  per intent (questions, intent accuracy / answer correctness):", cell_header]
    lines += _grouped_rows(columns, "per_intent")
    if any(section["per_topic"] for section in columns.values()):
        lines += ["  per topic (questions, intent accuracy / answer correctness):", cell_header]
        lines += _grouped_rows(columns, "per_topic")
    for name, section in report["splits"].items():
        if section["failures"]:
            lines.append(f"  {name}: {len(section['failures'])} questions with problems:")
            for failure in section["failures"]:
                lines.append(
                    f"    {failure['id']} {failure['question']!r}: "
                    + "; ".join(failure["problems"])
                )
    return "\n".join(lines)


def thresholds_missed(
    report: dict[str, Any],
    min_intent_accuracy: float,
    min_answer_correctness: float,
    min_heldout_answer_correctness: float = 0.0,
) -> list[str]:
    """The gates `finq eval` exits 1 on: intent and answers on the dev split (the one the
    rules are tuned on), answers on the held-out split (0 by default: reported, not gated)."""
    gates: list[tuple[Split, str, float]] = [
        ("dev", "intent_accuracy", min_intent_accuracy),
        ("dev", "answer_correctness", min_answer_correctness),
        ("heldout", "answer_correctness", min_heldout_answer_correctness),
    ]
    missed: list[str] = []
    for split, name, minimum in gates:
        section = report["splits"].get(split)
        if section is not None and section[name] < minimum:
            missed.append(f"{split} {name} {section[name]:.1%} < {minimum:.0%}")
    return missed


def write_report(report: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")


# What eval_levels.json holds per split; the rates may fall at most LEVEL_SLACK below their
# level, the count may not rise at all.
LEVEL_RATES: tuple[str, ...] = ("intent_accuracy", "answer_correctness")
LEVEL_COUNTS: tuple[str, ...] = ("figures_for_another_question",)
# One point: a question or two of the larger splits answered differently under load (a
# deadline missed) is not a regression; more is.
LEVEL_SLACK = 0.01
WRITE_LEVELS_COMMAND = "finq eval --write-levels"


def measured_levels(report: dict[str, Any]) -> dict[str, Any]:
    """Each split's levels as `report` measured them; a split asked no questions has none."""
    splits: dict[str, Any] = {}
    for name in SPLITS:
        section = report["splits"].get(name)
        if section is None:
            splits[name] = {"questions": 0}
            continue
        splits[name] = {
            "questions": section["questions"],
            **{key: section[key] for key in LEVEL_RATES + LEVEL_COUNTS},
        }
    return {"measured_by": WRITE_LEVELS_COMMAND, "splits": splits}


def write_levels(report: dict[str, Any], path: Path = LEVELS_FILE) -> dict[str, Any]:
    """Write the levels `report` measured (a report of every bundled question) to `path`."""
    levels = measured_levels(report)
    path.write_text(json.dumps(levels, indent=2) + "\n")
    return levels


def load_levels(path: Path = LEVELS_FILE) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def levels_missed(report: dict[str, Any], levels: dict[str, Any]) -> list[str]:
    """Where `report` falls below the measured `levels`: a rate more than LEVEL_SLACK under
    its level, a count above it. Levels measured on other questions than were asked compare
    nothing, so a split whose question count changed is named too, to be measured again."""
    missed: list[str] = []
    for name in SPLITS:
        section = report["splits"].get(name)
        asked = section["questions"] if section else 0
        level = levels["splits"].get(name)
        if level is None or level["questions"] != asked:
            measured = "no level" if level is None else f"a level of {level['questions']} questions"
            missed.append(
                f"{name}: {asked} questions asked against {measured}; "
                f"measure again with `{WRITE_LEVELS_COMMAND}`"
            )
            continue
        if section is None:
            continue
        for key in LEVEL_RATES:
            # 1e-9: a rate exactly a point below, less float noise, is within the slack.
            if section[key] < level[key] - LEVEL_SLACK - 1e-9:
                missed.append(f"{name} {key} {section[key]:.1%} < level {level[key]:.1%}")
        for key in LEVEL_COUNTS:
            if section[key] > level[key]:
                missed.append(f"{name} {key} {section[key]} > level {level[key]}")
    return missed
