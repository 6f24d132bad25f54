"""The command line's progress: one line rewritten in place on a terminal, plain lines at a
modest rate anywhere else, always on its own stream (stderr), never on stdout."""

from __future__ import annotations

import io

import httpx
import pytest

from services.control.commands.gateway_readiness import waiting_for
from services.control.progress import Progress, duration


class FakeStream(io.StringIO):
    """A stream that says whether it is a terminal."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_durations_are_short_and_unambiguous() -> None:
    assert [duration(s) for s in (0.2, 4, 59.4, 65, 3723)] == [
        "0 s",
        "4 s",
        "59 s",
        "1:05",
        "1:02:03",
    ]


def test_on_a_terminal_a_step_is_one_line_rewritten_with_count_item_elapsed_and_eta() -> None:
    stream, clock = FakeStream(tty=True), FakeClock()
    progress = Progress(stream, clock=clock)

    step = progress.step("ingesting filings", total=12)
    step.start("aapl-10k-2022.htm")
    clock.now += 10
    step.start("aapl-10k-2023.htm")
    clock.now += 10
    step.start("msft-10k-2023.htm")
    step.finish()

    frames = stream.getvalue().split("\r\x1b[K")
    assert "\n" not in "".join(frames[:-1]), "no line ends before the step does"
    assert frames[-2] == "ingesting filings: 3/12 msft-10k-2023.htm [20 s, ETA 1:40]"
    assert frames[-1] == "ingesting filings: 3/12 done in 20 s\n"


def test_off_a_terminal_a_step_prints_plain_lines_its_first_and_last_item_and_few_between() -> None:
    stream, clock = FakeStream(tty=False), FakeClock()
    progress = Progress(stream, clock=clock, interval=2.0)

    step = progress.step("ingesting filings", total=50)
    for number in range(1, 51):
        step.start(f"file-{number}.htm")
        clock.now += 0.1  # 5 s in all: a line every 2 s at most
    step.finish()

    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()
    assert lines[0] == "ingesting filings: 1/50 file-1.htm [0 s]"
    assert lines[-2].startswith("ingesting filings: 50/50 file-50.htm")
    assert lines[-1] == "ingesting filings: 50/50 done in 5 s"
    assert len(lines) <= 6, lines


def test_work_done_in_any_order_counts_up_with_its_detail() -> None:
    stream = FakeStream(tty=False)
    progress = Progress(stream, interval=0)

    with progress.step("asking the golden questions", total=2) as asked:
        asked.done("g2", "answers right so far 1/1")
        asked.done("g1", "answers right so far 1/2")

    assert stream.getvalue().splitlines()[:2] == [
        "asking the golden questions: 1/2 g2 (answers right so far 1/1) [0 s, ETA 0 s]",
        "asking the golden questions: 2/2 g1 (answers right so far 1/2) [0 s]",
    ]


def test_a_wait_says_what_it_waits_for_and_what_it_waits_for_next() -> None:
    stream, clock = FakeStream(tty=False), FakeClock()
    progress = Progress(stream, clock=clock)

    with progress.waiting("waiting for the gateway at http://127.0.0.1:8000") as wait:
        clock.now += 3
        wait.update("waiting for router, tools to be ready (loading models)")
        clock.now += 11
        wait.update("waiting for router, tools to be ready (loading models)")

    assert stream.getvalue().splitlines() == [
        "waiting for the gateway at http://127.0.0.1:8000…",
        "waiting for router, tools to be ready (loading models)… (3 s so far)",
        "still waiting for router, tools to be ready (loading models) (14 s so far)",
        "waiting for router, tools to be ready (loading models): done in 14 s",
    ]


def test_a_wait_that_fails_says_it_gave_up() -> None:
    stream = FakeStream(tty=True)
    progress = Progress(stream)

    with pytest.raises(RuntimeError), progress.waiting("waiting for PostgreSQL on port 5"):
        raise RuntimeError("no")

    assert stream.getvalue().endswith("waiting for PostgreSQL on port 5: gave up after 0 s\n")


def test_a_result_printed_during_a_step_goes_to_stdout_unchanged_above_the_live_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stream = FakeStream(tty=True)
    progress = Progress(stream)
    step = progress.step("ingesting from SEC", total=2)
    step.start("AAPL")

    progress.above("AAPL (CIK 0000320193): loaded 10 metric values")

    assert capsys.readouterr().out == "AAPL (CIK 0000320193): loaded 10 metric values\n"
    # The live line is cleared for the result and drawn again after it.
    assert stream.getvalue().endswith("\r\x1b[Kingesting from SEC: 1/2 AAPL [0 s]")


def test_a_note_is_a_line_of_its_own_in_both_modes() -> None:
    for tty in (True, False):
        stream = FakeStream(tty)
        progress = Progress(stream)
        progress.step("ingesting from SEC", total=1).start("AAPL")
        progress.note("waiting 4 s for SEC's rate limit (HTTP 429 Too Many Requests)")
        assert "waiting 4 s for SEC's rate limit (HTTP 429 Too Many Requests)\n" in (
            stream.getvalue()
        )


def test_silent_progress_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress.silent()
    with progress.waiting("migrating the database"), progress.step("x", total=1) as step:
        step.start("y")
        progress.note("z")

    assert capsys.readouterr() == ("", "")


def test_readyz_names_the_stages_still_loading_their_models() -> None:
    not_ready = httpx.Response(
        503, json={"code": "not_ready", "message": "stages not consuming yet: router, tools"}
    )
    no_nats = httpx.Response(503, json={"code": "not_ready", "message": "NATS is not connected"})

    assert waiting_for(not_ready) == "waiting for router, tools to be ready (loading models)"
    assert waiting_for(no_nats) == "waiting for the gateway: NATS is not connected"
