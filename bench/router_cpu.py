"""The router's own CPU per question, in process: every bundled golden question routed by the
rules (the layer every question passes through; no model, no classifier), over the bundled
dataset's companies. Run on two checkouts to compare their readers:

    .venv/bin/python bench/router_cpu.py            # this checkout
    cd ../other && /path/to/.venv/bin/python bench/router_cpu.py

Prints CPU ms per question (process time, so another process on the machine does not count)
as the median of several rounds, with the minimum and maximum."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.control.commands.database_setup import prepare_database
from services.control.servers import PostgresServer, free_port
from services.router.main import load_directory
from services.router.routing import decide_route
from services.router.rules import metric_finder
from shared.metric_resolver import MetricResolver

CONTROL = Path(__file__).resolve().parents[1] / "services" / "control"


def questions() -> list[str]:
    """Every bundled golden question's text, whatever split its file holds."""
    texts: list[str] = []
    for path in sorted(CONTROL.glob("golden_questions*.jsonl")):
        texts += [json.loads(line)["question"] for line in path.read_text().splitlines() if line]
    return texts


async def measure(rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as home:
        postgres = PostgresServer(Path(home) / "postgres", free_port())
        postgres.start()
        try:
            await prepare_database(postgres.dsn, service_dsn=postgres.service_dsn)
            pool = await asyncpg.create_pool(postgres.dsn, min_size=1, max_size=2)
            try:
                directory = await load_directory(pool)
            finally:
                await pool.close()
        finally:
            postgres.stop()
    finder = metric_finder(directory, MetricResolver.from_catalog())
    asked = questions()
    for question in asked:  # warm: compiled patterns, caches
        decide_route(question, directory, finder)
    per_question: list[float] = []
    for _ in range(rounds):
        started = time.process_time()
        for question in asked:
            decide_route(question, directory, finder)
        per_question.append((time.process_time() - started) * 1000 / len(asked))
    return {
        "questions": len(asked),
        "rounds": rounds,
        "cpu_ms_per_question_median": round(statistics.median(per_question), 3),
        "min": round(min(per_question), 3),
        "max": round(max(per_question), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.rounds)), indent=2))


if __name__ == "__main__":
    main()
