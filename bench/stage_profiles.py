"""Where each stage spends its CPU under load: py-spy samples every finq process while a
benchmark level runs, and the samples are summed into the functions that cost the most.

py-spy (a development dependency) reads a running process from outside: the stages run
unchanged, at full speed, with no profiler of their own. It needs to ptrace them, which
root may and others may where `kernel.yama.ptrace_scope` is 0; without that the profile
is left out and the benchmark says why.
"""

from __future__ import annotations

import collections
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SAMPLES_PER_SECOND = 250
TOP_FUNCTIONS = 12
# A frame is finq's own when its file is under one of these folders.
OWN_CODE = ("services/", "shared/")


def py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


@dataclass
class StageProfile:
    process: str
    samples: int = 0
    # (share of samples where the function itself was running, function) for the top ones
    self_time: list[tuple[float, str]] = field(default_factory=list)
    # ...and where one of finq's own functions was anywhere on the stack
    own_inclusive: list[tuple[float, str]] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "process": self.process,
            "samples": self.samples,
            "self_percent": [{"percent": p, "function": f} for p, f in self.self_time],
            "own_inclusive_percent": [{"percent": p, "function": f} for p, f in self.own_inclusive],
            "error": self.error,
        }


def _function(frame: str) -> str:
    """`name (path/to/file.py:123)` → `name (file.py)`: lines of one function summed."""
    name, _, place = frame.partition(" (")
    path = place.rstrip(")").rsplit(":", 1)[0]
    return f"{name} ({path.rsplit('/site-packages/', 1)[-1]})"


def summarize(process: str, raw: str) -> StageProfile:
    """A py-spy `--format raw` file (one stack a line, frames `;`-separated, then a count)."""
    own: collections.Counter[str] = collections.Counter()
    leaf: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = [_function(frame) for frame in stack.split(";")]
        leaf[frames[-1]] += count
        for frame in set(frames):
            if any(folder in frame for folder in OWN_CODE):
                own[frame] += count
    if not total:
        return StageProfile(process, error="no samples (an idle process, or py-spy could not read)")

    def top(counter: collections.Counter[str]) -> list[tuple[float, str]]:
        return [
            (round(100.0 * n / total, 1), name) for name, n in counter.most_common(TOP_FUNCTIONS)
        ]

    return StageProfile(process, total, top(leaf), top(own))


class StageProfiler:
    """`start(pids, seconds)` while a level runs, `collect()` after it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.running: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        self.unavailable: str | None = None if py_spy() else "py-spy is not installed"

    def start(self, pids: dict[str, int], seconds: float) -> None:
        binary = py_spy()
        if binary is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        for name, pid in pids.items():
            out = self.folder / f"{name}.txt"
            command = [
                binary,
                "record",
                "--pid",
                str(pid),
                "--duration",
                str(max(1, int(seconds))),
                "--rate",
                str(SAMPLES_PER_SECOND),
                "--format",
                "raw",
                "--output",
                str(out),
                # Sampling without pausing the process: the stage keeps its speed.
                "--nonblocking",
            ]
            self.running[name] = (
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE),
                out,
            )

    def collect(self) -> list[StageProfile]:
        profiles: list[StageProfile] = []
        for name, (process, out) in self.running.items():
            _, stderr = process.communicate(timeout=120)
            if out.exists():
                profiles.append(summarize(name, out.read_text()))
            else:
                reason = stderr.decode(errors="replace").strip().splitlines()
                profiles.append(StageProfile(name, error=reason[-1] if reason else "no output"))
        self.running.clear()
        return profiles


def print_profiles(profiles: list[StageProfile], shown: int = 6) -> None:
    for profile in profiles:
        if profile.error:
            print(f"  {profile.process}: {profile.error}")
            continue
        print(f"  {profile.process} ({profile.samples} samples): where it ran")
        for percent, function in profile.self_time[:shown]:
            print(f"    {percent:5.1f}%  {function}")
        print("    finq's own code, inclusive:")
        for percent, function in profile.own_inclusive[:shown]:
            print(f"    {percent:5.1f}%  {function}")
