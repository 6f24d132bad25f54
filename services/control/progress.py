"""Progress of the command line's long work, on stderr, so stdout keeps only the results
that scripts parse.

On a terminal a long step is one line rewritten in place ("ingesting filings: 3/12
aapl-10k-2023.htm [0:42, ETA 1:10]"), and a wait says what it waits for and for how long.
Anywhere else (CI, a log file, a pipe) the same news comes as plain lines at a modest rate:
a step's first and last item and at most one line every `interval` seconds between them, a
wait's start, its changes, a reminder every `STILL_WAITING_SECONDS`, and its end.

tqdm comes with sentence-transformers, but off a terminal it writes carriage-return frames
(one endless line in a log) or nothing, and it has no notion of a wait that changes what it
waits for; rich is only a development dependency. What is needed is the few lines below.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

# Off a terminal, at most one line a step prints between its first and last item.
PLAIN_INTERVAL_SECONDS = 2.0
# Off a terminal, how often a long wait says it is still waiting.
STILL_WAITING_SECONDS = 10.0
# On a terminal, how often a wait's line is redrawn so its elapsed time moves.
TICK_SECONDS = 0.5
_CLEAR_LINE = "\r\x1b[K"


def duration(seconds: float) -> str:
    """ "4 s", "1:05", "1:02:03": short and unambiguous."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole} s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Where progress goes (`stream`, stderr by default; None: nowhere) and how: a line
    rewritten in place when the stream is a terminal, plain lines otherwise."""

    def __init__(
        self,
        stream: TextIO | None = sys.stderr,
        *,
        interval: float = PLAIN_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.interval = interval
        self.clock = clock
        self.tty = bool(stream is not None and stream.isatty())
        self._live = ""  # the line being rewritten on a terminal, "" when none is shown
        self._lock = threading.RLock()

    @classmethod
    def silent(cls) -> Progress:
        return cls(None)

    # --- writing ---

    def _width(self) -> int:
        return max(20, shutil.get_terminal_size((100, 24)).columns - 1)

    def _show(self, text: str) -> None:
        """On a terminal: replace the live line with `text` (cut to the screen's width)."""
        if self.stream is None:
            return
        with self._lock:
            self._live = text[: self._width()]
            self.stream.write(_CLEAR_LINE + self._live)
            self.stream.flush()

    def _line(self, text: str) -> None:
        """A line of its own, above the live line if one is shown, which is redrawn."""
        if self.stream is None:
            return
        with self._lock:
            if self.tty and self._live:
                self.stream.write(_CLEAR_LINE + text + "\n" + self._live)
            else:
                self.stream.write(text + "\n")
            self.stream.flush()

    def _settle(self, text: str) -> None:
        """On a terminal: the live line becomes `text`, for good."""
        if self.stream is None:
            return
        with self._lock:
            self.stream.write(_CLEAR_LINE + text + "\n")
            self._live = ""
            self.stream.flush()

    def note(self, message: str) -> None:
        """News that must not be missed (a wait SEC asked for): a line of its own."""
        self._line(message)

    def above(self, text: str, file: TextIO | None = None) -> None:
        """Print a result line to `file` (stdout) unchanged, without mixing it into the live
        line when both go to the same terminal."""
        out = file or sys.stdout
        with self._lock:
            live = self._live if self.tty and self.stream is not None else ""
            if live:
                assert self.stream is not None
                self.stream.write(_CLEAR_LINE)
                self.stream.flush()
            print(text, file=out, flush=True)
            if live:
                assert self.stream is not None
                self.stream.write(live)
                self.stream.flush()

    # --- the two kinds of long work ---

    def step(self, name: str, total: int | None = None) -> Step:
        """Counted work: `name` ("ingesting filings") over `total` items when known."""
        return Step(self, name, total)

    @contextmanager
    def waiting(self, message: str) -> Iterator[Wait]:
        """A wait on something that says nothing until it is done ("waiting for PostgreSQL
        on port 54329"): shown with the time it has taken, until the block ends."""
        wait = Wait(self, message)
        wait.begin()
        try:
            yield wait
        except BaseException:
            wait.end(failed=True)
            raise
        wait.end()


class Step:
    """A count of items done (and the one being worked on), with elapsed time and, when the
    total is known, an estimate of the time left from the pace so far."""

    def __init__(self, progress: Progress, name: str, total: int | None) -> None:
        self.progress = progress
        self.name = name
        self.total = total
        self.done_count = 0
        self.item = ""
        self.working = False  # an item was started and is not done yet
        self.detail_text = ""
        self.started = progress.clock()
        self._printed_at: float | None = None

    def _text(self) -> str:
        count = self.done_count + (1 if self.working else 0)
        if self.total is not None:
            count = min(count, self.total)
        counted = f"{count}/{self.total}" if self.total is not None else f"{count}"
        parts = [f"{self.name}: {counted}"]
        if self.item:
            parts.append(f" {self.item}")
        if self.detail_text:
            parts.append(f" ({self.detail_text})")
        elapsed = self.progress.clock() - self.started
        timing = duration(elapsed)
        if self.total is not None and 0 < self.done_count < self.total:
            left = elapsed / self.done_count * (self.total - self.done_count)
            timing += f", ETA {duration(left)}"
        parts.append(f" [{timing}]")
        return "".join(parts)

    def _changed(self, force: bool = False) -> None:
        progress = self.progress
        if progress.tty:
            progress._show(self._text())
            return
        now = progress.clock()
        due = self._printed_at is None or now - self._printed_at >= progress.interval
        if force or due:
            self._printed_at = now
            progress._line(self._text())

    def _is_last(self) -> bool:
        return self.total is not None and self.done_count + 1 >= self.total

    def start(self, item: str) -> None:
        """Now working on `item` (shown as the next number); the item worked on before, if
        any, is done."""
        if self.working:
            self.done_count += 1
        self.item, self.working, self.detail_text = item, True, ""
        self._changed(force=self._printed_at is None or self._is_last())

    def detail(self, text: str) -> None:
        """What the current item is doing or waiting for."""
        self.detail_text = text
        self._changed()

    def done(self, item: str | None = None, detail: str = "") -> None:
        """One more item finished: the one started, or `item` (for work that finishes in
        any order, such as questions asked concurrently)."""
        self.done_count += 1
        self.working = False
        if item is not None:
            self.item = item
        self.detail_text = detail
        self._changed(force=self._printed_at is None)

    def finish(self, summary: str = "") -> None:
        if self.working:
            self.done_count, self.working = self.done_count + 1, False
        elapsed = duration(self.progress.clock() - self.started)
        counted = f"{self.done_count}/{self.total}" if self.total is not None else self.done_count
        text = f"{self.name}: {counted} done in {elapsed}" + (f"; {summary}" if summary else "")
        if self.progress.tty:
            self.progress._settle(text)
        else:
            self.progress._line(text)

    def __enter__(self) -> Step:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.finish("stopped" if kind is not None else "")


class Wait:
    """One wait, whose message may change as what it waits for changes."""

    def __init__(self, progress: Progress, message: str) -> None:
        self.progress = progress
        self.message = message
        self.started = progress.clock()
        self._reminded = self.started
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def _elapsed(self) -> str:
        return duration(self.progress.clock() - self.started)

    def begin(self) -> None:
        progress = self.progress
        if progress.stream is None:
            return
        if progress.tty:
            progress._show(f"{self.message}… {self._elapsed()}")
        else:
            progress._line(f"{self.message}…")
        # The work blocks this thread; the clock on the line (or the reminder in a log)
        # moves on in another.
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            with self.progress._lock:
                if self.progress.tty:
                    self.progress._show(f"{self.message}… {self._elapsed()}")
                else:
                    self._remind()

    def _remind(self) -> None:
        now = self.progress.clock()
        if now - self._reminded >= STILL_WAITING_SECONDS:
            self._reminded = now
            self.progress._line(f"still {self.message} ({self._elapsed()} so far)")

    def update(self, message: str) -> None:
        """What is waited for now; off a terminal a line when it changes, and a reminder
        every STILL_WAITING_SECONDS while it does not."""
        progress = self.progress
        if progress.tty:
            self.message = message
            progress._show(f"{message}… {self._elapsed()}")
            return
        with progress._lock:
            if message != self.message:
                self.message, self._reminded = message, progress.clock()
                progress._line(f"{message}… ({self._elapsed()} so far)")
            else:
                self._remind()

    def end(self, failed: bool = False) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        text = f"{self.message}: {'gave up after' if failed else 'done in'} {self._elapsed()}"
        if self.progress.tty:
            self.progress._settle(text)
        else:
            self.progress._line(text)
