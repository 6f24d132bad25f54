"""The fault suite (bench/faults.py) in `make test`: a steady load of distinct questions
through a pipeline of its own while every nemesis runs (more than 30 kill -9s of stage
processes, nats-server killed and restarted, PostgreSQL stopped and started, a stage
paused past the ack wait, poison messages, a model slower than the ack wait, a stream too
small for its backlog). No question may be lost, answered twice or left unclear: each is
answered (maybe late) or failed with a clear error."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from services.gateway.reconciler import fresh_start_for
from shared.subjects import Stage, message_id
from tests.helpers import REPO_ROOT


def load_fault_suite() -> Any:
    spec = importlib.util.spec_from_file_location("bench_faults", REPO_ROOT / "bench" / "faults.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


faults = load_fault_suite()

# The short run, a little shorter: the same 32 stage kills, each other nemesis at least once.
# Its steady clients are paced (about 8 questions a second, not the bench's saturating 20):
# questions are still in flight through every fault, at a third of the CPU, which the rest
# of the suite shares. The slow model and the full stream ask bursts of their own.
TEST_PLAN = dataclasses.replace(
    faults.PLANS["short"],
    pace_seconds=0.4,
    baseline_seconds=2.0,
    kill_interval_seconds=0.9,
    nats_kills=1,
    stage_pauses=1,
    slow_model_seconds=8.0,
    recover_seconds=3.0,
)
SEED = 14
NEMESES = (
    "stage_kill",
    "nats_kill",
    "postgres_pause",
    "stage_pause",
    "poison",
    "slow_model",
    "full_stream",
)


def what_went_wrong(tallies: dict[str, Any]) -> str:
    lines = [faults.table_text(tallies)]
    for tally in tallies.values():
        lines.extend(f"{tally.nemesis}: {line}" for line in [*tally.notes, *tally.examples])
    return "\n".join(lines)


@pytest.mark.e2e
@pytest.mark.timeout(420)
async def test_under_every_nemesis_no_question_is_lost_answered_twice_or_unclear(
    tmp_path: Path,
) -> None:
    result = await faults.run_faults(TEST_PLAN, SEED, tmp_path / "faults")
    tallies = result["tallies_objects"]
    report = what_went_wrong(tallies)
    print(report)

    assert result["stage_kills"] >= 30, report
    for nemesis in NEMESES:
        assert tallies[nemesis].faults >= 1, f"{nemesis} injected nothing\n{report}"
        assert tallies[nemesis].attempted > 0, f"no question asked under {nemesis}\n{report}"
    # The full stream dropped work before it was read, and the poison reached every stage.
    assert tallies["full_stream"].dropped_unread > 0, report
    assert tallies["poison"].poison_injected == len(faults.subjects.STAGE_SUBJECTS), report

    verdict = result["verdict"]
    assert verdict["lost"] == 0, report
    assert verdict["twice"] == 0, report
    assert verdict["unclear"] == 0, report
    assert verdict["poison_lost"] == 0, report
    total = faults.rows_of(tallies)[-1]
    assert total.attempted == total.answered + total.failed_clear, report


@pytest.mark.e2e
@pytest.mark.timeout(420)
async def test_a_database_outage_past_the_deadline_is_waited_out_and_nothing_is_dead_lettered(
    tmp_path: Path,
) -> None:
    # Two and a half deadlines rather than the bench's minute (`bench/faults.py --outage`):
    # long enough that questions saved before it wait past their deadline and are answered
    # after it, short enough to spare the suite half a minute.
    plan = dataclasses.replace(
        faults.PLANS["outage"],
        baseline_seconds=4.0,
        recover_seconds=4.0,
        postgres_outage_seconds=2.5 * faults.DEADLINE_SECONDS,
    )
    result = await faults.run_faults(plan, SEED + 1, tmp_path / "outage")
    tallies = result["tallies_objects"]
    report = what_went_wrong(tallies)
    print(report)
    outage = tallies["postgres_outage"]

    assert outage.faults == 1 and outage.attempted > 100, report
    # Questions saved before the database went away are answered after it came back, late.
    assert outage.late > 0, report
    # Questions asked while it was away could not be saved: a 503 at once. A question saved
    # before it waited past its deadline (504) and was answered after it: every 504 is late.
    probes = int(plan.postgres_outage_seconds / faults.PROBE_EVERY_SECONDS)
    assert outage.error_codes.get("503 unavailable", 0) >= 0.9 * probes, report
    assert set(outage.error_codes) <= {"503 unavailable", "504 deadline_exceeded"}, report
    assert outage.error_codes.get("504 deadline_exceeded", 0) <= outage.late, report
    assert outage.slowest_error_seconds < 2.0, report
    # Waited out, not given up on: no dead letter, nothing lost, nothing answered twice.
    assert outage.dead_lettered == 0, report
    verdict = result["verdict"]
    assert verdict["lost"] == verdict["twice"] == verdict["unclear"] == 0, report
    assert verdict["outage_dead_lettered"] == 0, report
    total = faults.rows_of(tallies)[-1]
    assert total.attempted == total.answered + total.failed_clear, report


def test_a_question_unanswered_past_its_deadline_is_started_afresh_with_ids_of_its_own() -> None:
    # Until its deadline the reconciler publishes the first start again (a duplicate the
    # stream drops if it still holds it); then fresh starts at 1, 2, 4, ... deadlines.
    ages = (0, 3, 9.9, 10, 19, 20, 39, 40, 70)
    assert [fresh_start_for(age, 10.0) for age in ages] == [0, 0, 0, 1, 1, 2, 2, 3, 3]
    ids = {message_id("r1", Stage.ROUTER, 0, start) for start in range(4)}
    assert len(ids) == 4
    # The first start keeps the ids finq has always used.
    assert message_id("r1", Stage.ROUTER, 0) == "r1:router:0"
