"""The suite's own scheduling on two pytest-xdist workers (tests/conftest.py): a module's tests
all run on one worker, so its module fixtures (a pipeline, an embedded filing) start once.
xdist's loadgroup once lost its groups without a word (pytest-xdist issue 1386) and every
module's fixtures started on both workers; this runs a small suite of its own to see it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.conftest import FILING_READERS, work_unit

REPO = Path(__file__).resolve().parents[2]

# Each test writes down its module and the worker that ran it.
MODULE = """
import os
from pathlib import Path


def record():
    with Path(os.environ["RECORD"]).open("a") as out:
        out.write(f"{{__name__}} {{os.environ['PYTEST_XDIST_WORKER']}}\\n")


{tests}
"""


def test_a_module_and_the_filing_readers_are_each_one_unit_of_work() -> None:
    assert work_unit("tests/tools/test_prices.py::test_a[1]") == "tests/tools/test_prices.py"
    assert work_unit("tests/tools/test_prices.py::test_b") == "tests/tools/test_prices.py"
    assert {work_unit(f"tests/ingest/{name}.py::test_x") for name in FILING_READERS} == {"filings"}


def test_on_two_workers_each_module_runs_whole_on_one_of_them(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    for module in ("test_first", "test_second", "test_third"):
        tests = "\n".join(f"def test_{n}():\n    record()\n" for n in range(6))
        (suite / f"{module}.py").write_text(MODULE.format(tests=tests))
    record = tmp_path / "record.txt"
    # A folder of its own for the inner run's temporary files: left to itself, pytest sets
    # /tmp/pytest-of-<user> back to 0700, which shuts the session's PostgreSQL (running as
    # its own user, let through that folder) out of its data and stops it.
    plugins = ["-p", "tests.conftest", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t")]
    workers_args = ["-n", "2", "--dist", "loadscope", "--rootdir", str(suite), str(suite)]
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *plugins, *workers_args],
        cwd=REPO,
        env={**os.environ, "RECORD": str(record), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    ran_on: dict[str, set[str]] = defaultdict(set)
    runs = record.read_text().split("\n")[:-1]
    for line in runs:
        module, worker = line.split()
        ran_on[module].add(worker)
    assert len(runs) == 18
    assert {module: len(workers) for module, workers in ran_on.items()} == {
        "test_first": 1,
        "test_second": 1,
        "test_third": 1,
    }
    # And the work is shared: both workers ran a module.
    assert len(set().union(*ran_on.values())) == 2
