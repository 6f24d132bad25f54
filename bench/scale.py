"""Figures at scale: finq holding 7, 500 or 5,000 companies.

    .venv/bin/python bench/scale.py [--sizes 7,500,5000] [--clients 1,64] [--questions 400]
                                    [--cache-groups 4096] [--data-dir ../shared/data]

For each size it starts its own PostgreSQL and NATS, loads the bundled dataset (the 7
companies), and adds synthetic companies made from the real four's SEC companyfacts
(DATA/sec/companyfacts): each a copy of one of them with a new CIK, name and ticker, every
value scaled by its own factor and every fiscal year (and date) shifted back 0-4 years.
They go in through finq's own ingest path: the companyfacts files are written, parsed by
`parse_companyfacts_files` (two processes, the machine's two cores) and loaded by
`load_dataset` in batches, with progress printed. Then it measures:

- ingest: seconds and companies per second, metric values loaded;
- the database: its size and the metric_values table's;
- the five services (bench/pipeline.py's machinery) asked figure questions spread over every
  company held, at each client count: p50/p99 and questions per second, and CPU per
  question by process;
- the tools stage's resident memory after the questions, with its in-memory figures bounded
  by FINQ_TOOLS_METRIC_CACHE_GROUPS (`--cache-groups`), and the router's.

Figures go to stdout, bench/out/scale-<timestamp>.json, and the block between its markers in
bench/RESULTS.md."""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import asyncpg  # noqa: E402

from bench.pipeline import (  # noqa: E402
    CpuMeter,
    bench_pipeline,
    describe_machine,
    git_commit,
    resident_mib,
    run_async,
    service_environment,
)
from bench.results_file import replace_block  # noqa: E402
from services.control.commands.database_setup import prepare_database  # noqa: E402
from services.control.commands.gateway_readiness import wait_until_ready  # noqa: E402
from services.control.servers import NatsServer, PostgresServer, free_port  # noqa: E402
from services.control.supervisor import Supervisor  # noqa: E402
from services.ingest.dataset import Dataset, load_dataset, parse_companyfacts_files  # noqa: E402
from shared.metric_catalog import CATALOG  # noqa: E402

OUT_DIR = REPO_ROOT / "bench" / "out"
BEGIN_MARK = "<!-- scale:figures:begin -->"
END_MARK = "<!-- scale:figures:end -->"
HEADING = """## Figures at 7, 500 and 5,000 companies (issue 27): `make bench-scale`

`bench/scale.py` adds synthetic companies (the real four's companyfacts with new CIKs,
names and tickers, scaled values, fiscal years shifted back) through finq's own ingest
path, then asks the five services figure questions spread over every company held. The
block below is written by the benchmark."""
BUNDLED = 7
LOAD_BATCH = 25  # companies per load_dataset transaction
BASE_CIKS = ("0000320193", "0001045810", "0001652044", "0001318605")
QUESTION_FORMS = (
    "What was {name}'s revenue in fiscal {year}?",
    "{ticker} net income FY{year}",
    "{name} total assets {year}",
    "{ticker} operating income {year}",
)


def ticker_of(index: int) -> str:
    """ZA, ZB, … ZZ, ZAA, …: tickers no real filer in the bundled dataset uses."""
    letters = ""
    index += 26
    while index:
        index, digit = divmod(index, 26)
        letters = chr(ord("A") + digit) + letters
    return "Z" + letters


def shifted_date(text: str, years: int) -> str:
    year, rest = text[:4], text[4:]
    if rest == "-02-29":
        rest = "-02-28"
    return f"{int(year) - years:04d}{rest}"


def synthetic_companyfacts(base: dict[str, Any], index: int) -> dict[str, Any]:
    """One of the real four's companyfacts as another company: new CIK and name, each value
    times this company's factor, each year and date `index % 5` years earlier."""
    rng = random.Random(index)
    factor = round(rng.uniform(0.05, 2.0), 4)
    shift = index % 5
    facts: dict[str, Any] = {}
    for taxonomy, tags in base["facts"].items():
        facts[taxonomy] = {}
        for tag, body in tags.items():
            units: dict[str, list[dict[str, Any]]] = {}
            for unit, rows in body.get("units", {}).items():
                moved = []
                for row in rows:
                    row = dict(row)
                    if isinstance(row.get("val"), int | float) and not unit.startswith("shares"):
                        row["val"] = round(row["val"] * factor, 2)
                    for key in ("start", "end", "filed"):
                        if isinstance(row.get(key), str):
                            row[key] = shifted_date(row[key], shift)
                    if isinstance(row.get("fy"), int):
                        row["fy"] -= shift
                    if isinstance(row.get("frame"), str):
                        row.pop("frame")
                    moved.append(row)
                units[unit] = moved
            facts[taxonomy][tag] = {**body, "units": units}
    return {
        "cik": 9_000_000 + index,
        "entityName": f"Scale Synthetic {ticker_of(index)} Corp",
        "facts": facts,
    }


def parse_one(path: str, symbol: str) -> tuple[Any, Any]:
    """finq's own parse of one companyfacts file (in a worker process)."""
    companies, values = parse_companyfacts_files([Path(path)], symbol)
    return companies, values


def write_companyfacts(folder: Path, base_dir: Path, count: int) -> list[tuple[str, str]]:
    """The synthetic companies' companyfacts files, and each one's path and ticker."""
    bases = [json.loads((base_dir / f"CIK{cik}.json").read_text()) for cik in BASE_CIKS]
    folder.mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[str, str]] = []
    for index in range(count):
        path = folder / f"CIK{9_000_000 + index:010d}.json"
        path.write_text(json.dumps(synthetic_companyfacts(bases[index % 4], index)))
        jobs.append((str(path), ticker_of(index)))
    return jobs


async def add_companies(dsn: str, folder: Path, base_dir: Path, count: int) -> dict[str, Any]:
    """Write `count` synthetic companyfacts files, parse them in two processes and load them
    in batches through load_dataset; progress on stdout."""
    started = time.perf_counter()
    jobs = write_companyfacts(folder, base_dir, count)
    written = time.perf_counter() - started
    print(f"  wrote {count:,} companyfacts files in {written:.1f} s", flush=True)
    conn = await asyncpg.connect(dsn)
    loaded_values = 0
    try:
        with ProcessPoolExecutor(max_workers=2) as pool:
            batch_companies: list[Any] = []
            batch_values: list[Any] = []
            parsed = pool.map(parse_one, *zip(*jobs, strict=True), chunksize=4)
            for done, (companies, values) in enumerate(parsed, start=1):
                batch_companies += companies
                batch_values += values
                if len(batch_companies) >= LOAD_BATCH or done == count:
                    dataset = Dataset(
                        companies=tuple(batch_companies),
                        metrics=CATALOG,
                        values=tuple(batch_values),
                    )
                    await load_dataset(conn, dataset)
                    loaded_values += len(batch_values)
                    batch_companies, batch_values = [], []
                    elapsed = time.perf_counter() - started
                    print(
                        f"  ingested {done:,}/{count:,} companies, {loaded_values:,} values, "
                        f"{elapsed:.0f} s ({done / elapsed:.1f} companies/s)",
                        flush=True,
                    )
    finally:
        await conn.close()
    seconds = time.perf_counter() - started
    return {
        "companies_added": count,
        "values_loaded": loaded_values,
        "seconds": round(seconds, 1),
        "companies_per_second": round(count / seconds, 2) if seconds else None,
    }


async def database_sizes(dsn: str) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn)
    try:
        return {
            "companies": await conn.fetchval("SELECT count(*) FROM companies"),
            "metric_values": await conn.fetchval("SELECT count(*) FROM metric_values"),
            "database_mb": round(
                await conn.fetchval("SELECT pg_database_size(current_database())") / 2**20, 1
            ),
            "metric_values_mb": round(
                await conn.fetchval("SELECT pg_total_relation_size('metric_values')") / 2**20, 1
            ),
        }
    finally:
        await conn.close()


async def questions_over_companies(dsn: str, count: int) -> tuple[str, ...]:
    """Figure questions over every company held, each about a year it holds, shuffled."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            """SELECT c.symbol, c.display_name,
                      (SELECT max(v.fiscal_year) FROM metric_values v
                        WHERE v.symbol = c.symbol AND v.period_type = 'annual'
                          AND v.metric = 'revenue') AS year
               FROM companies c"""
        )
    finally:
        await conn.close()
    rng = random.Random(27)
    held = [row for row in rows if row["year"] is not None]
    asked = []
    for n in range(count):
        row = held[n % len(held)] if n < len(held) else rng.choice(held)
        form = QUESTION_FORMS[n % len(QUESTION_FORMS)]
        year = row["year"] - rng.randrange(0, 3)
        asked.append(form.format(name=row["display_name"], ticker=row["symbol"], year=year))
    rng.shuffle(asked)
    return tuple(asked)


def measure_size(
    size: int, args: argparse.Namespace, clients: list[int], base_dir: Path
) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"finq-scale-{size}-"))
    postgres = PostgresServer(home / "postgres", free_port())
    nats = NatsServer(home / "nats", free_port())
    supervisor: Supervisor | None = None
    result: dict[str, Any] = {"size": size}
    try:
        postgres.start()
        nats.start()
        run_async(
            prepare_database(postgres.dsn, load_glossary=False, service_dsn=postgres.service_dsn)
        )
        if size > BUNDLED:
            print(f"adding {size - BUNDLED:,} companies to the bundled {BUNDLED}", flush=True)
            result["ingest"] = run_async(
                add_companies(postgres.dsn, home / "companyfacts", base_dir, size - BUNDLED)
            )
        result["database"] = run_async(database_sizes(postgres.dsn))
        print(f"  database: {result['database']}", flush=True)
        port = free_port()
        env = {
            **service_environment(nats, postgres, port),
            "FINQ_TOOLS_METRIC_CACHE_GROUPS": str(args.cache_groups),
        }
        supervisor = Supervisor(home / "logs", env, {}, stage_env=nats.credentials_env)
        started = time.perf_counter()
        supervisor.start()
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(url, supervisor, timeout=300)
        result["ready_seconds"] = round(time.perf_counter() - started, 1)
        assert postgres.process is not None and nats.process is not None
        processes = {s.name: s.process.pid for s in supervisor.services if s.process}
        processes["nats"] = nats.process.pid
        processes["postgres"] = postgres.process.pid
        questions = run_async(questions_over_companies(postgres.dsn, max(args.questions, size)))
        meter = CpuMeter(processes, frozenset({"postgres"}))
        levels = []
        for concurrency in clients:
            [level] = run_async(
                bench_pipeline(
                    url,
                    [(concurrency, args.questions)],
                    args.warmup,
                    meter,
                    supervisor,
                    "raw",
                    questions=questions,
                )
            )
            levels.append(
                {
                    "clients": concurrency,
                    "p50_ms": level.p50_ms,
                    "p99_ms": level.p99_ms,
                    "qps": level.qps,
                    "failures": level.failures,
                    "failure_samples": level.failure_samples[:3],
                    "cpu_ms_per_question": level.cpu_ms_per_question,
                }
            )
        result["levels"] = levels
        result["memory_mib"] = resident_mib(processes)
        print(f"  resident memory (MiB): {result['memory_mib']}", flush=True)
    finally:
        if supervisor is not None:
            supervisor.stop()
        nats.stop()
        postgres.stop()
        if not args.keep:
            import shutil

            shutil.rmtree(home, ignore_errors=True)
    return result


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Measured {report['when']} at commit {report['commit']} "
        f"(`{' '.join(report['command'])}`), "
        f"the tools stage bounded to {report['cache_groups']:,} groups of figures "
        f"(FINQ_TOOLS_METRIC_CACHE_GROUPS); raw JSON `{report['json']}`.",
        "",
        "| companies | metric values | database MB | ingest s (companies/s) | clients "
        "| p50 ms | p99 ms | q/s | failures | tools MiB | router MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in report["sizes"]:
        ingest = size.get("ingest")
        ingest_text = (
            f"{ingest['seconds']} ({ingest['companies_per_second']})" if ingest else "bundled"
        )
        memory = size.get("memory_mib", {})
        for level in size.get("levels", []):
            lines.append(
                f"| {size['database']['companies']:,} | {size['database']['metric_values']:,} | "
                f"{size['database']['database_mb']:,} | {ingest_text} | {level['clients']} | "
                f"{level['p50_ms']} | {level['p99_ms']} | {level['qps']} | {level['failures']} | "
                f"{memory.get('tools-0', '')} | {memory.get('router-0', '')} |"
            )
    first = report["sizes"][0]["levels"][0]["p50_ms"] if report["sizes"][0].get("levels") else None
    for size in report["sizes"][1:]:
        one = [lv for lv in size.get("levels", []) if lv["clients"] == 1]
        if first and one:
            lines.append(
                f"\nAt {size['database']['companies']:,} companies the one-client p50 is "
                f"{one[0]['p50_ms'] / first:.2f}× the "
                f"{report['sizes'][0]['database']['companies']}-company figure (the bar: ≤ 1.3×)."
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="7,500,5000")
    parser.add_argument("--clients", default="1,64")
    parser.add_argument("--questions", type=int, default=400, help="measured per level")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--cache-groups", type=int, default=4096)
    parser.add_argument("--data-dir", default=str(REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument("--keep", action="store_true", help="keep each size's folder")
    parser.add_argument("--no-results-md", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    clients = [int(c) for c in args.clients.split(",")]
    base_dir = Path(args.data_dir) / "sec" / "companyfacts"
    if any(size > BUNDLED for size in sizes) and not base_dir.is_dir():
        raise SystemExit(f"no companyfacts under {base_dir}: give --data-dir (../shared/data)")
    if any(size < BUNDLED for size in sizes):
        raise SystemExit(f"sizes start at the bundled {BUNDLED} companies")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(describe_machine(), flush=True)
    report: dict[str, Any] = {
        "when": f"{datetime.now():%Y-%m-%d %H:%M}",
        "commit": git_commit(),
        "command": [Path(sys.executable).name, *sys.argv],
        "cache_groups": args.cache_groups,
        "sizes": [],
    }
    for size in sizes:
        print(f"\n== {size:,} companies", flush=True)
        report["sizes"].append(measure_size(size, args, clients, base_dir))
        for level in report["sizes"][-1].get("levels", []):
            print(
                f"  c={level['clients']:<3} p50 {level['p50_ms']} ms  p99 {level['p99_ms']} ms  "
                f"{level['qps']} q/s  failures {level['failures']}",
                flush=True,
            )
    OUT_DIR.mkdir(exist_ok=True)
    out = OUT_DIR / f"scale-{datetime.now():%Y%m%d-%H%M%S}.json"
    report["json"] = str(out.relative_to(REPO_ROOT))
    out.write_text(json.dumps(report, indent=1, default=str))
    print(f"wrote {out}")
    text = markdown(report)
    print(text)
    if not args.no_results_md:
        replace_block(BEGIN_MARK, END_MARK, text, HEADING)
        print("wrote its block of bench/RESULTS.md")
    os._exit(0)  # the worker pool's and servers' threads are done; do not wait on atexit


if __name__ == "__main__":
    main()
