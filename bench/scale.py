"""Figures at scale: finq holding 7, 500 or 5,000 companies.

    .venv/bin/python bench/scale.py [--sizes 7,500,5000] [--clients 1,64] [--questions 1000]
                                    [--cache-groups 1024] [--history-years 3]
                                    [--data-dir ../shared/data]

It starts its own PostgreSQL and NATS under a temporary folder, loads the bundled dataset
(the 7 companies), and grows that one database to each size in turn with synthetic
companies made from the real four's SEC companyfacts (DATA/sec/companyfacts): each a copy of
one of them with a new CIK, name and ticker, its last `--history-years` years of filings,
every value scaled by its own factor and every fiscal year (and date) shifted back 0-4
years. They go in through finq's own ingest: companyfacts and submissions files written as
`finq ingest sec` keeps them and loaded by `ingest_companyfacts_files` (what `finq ingest
companyfacts` runs), 20 companies a transaction on two processes, with progress printed.
At each size it measures:

- ingest: seconds, companies per second, metric values per company;
- the database: its size and its largest tables';
- the five services (bench/pipeline.py's machinery), started afresh on it, asked figure
  questions spread over the companies held at each client count: p50/p99, questions per
  second, CPU per question by process; the router's start (it reads every company's names)
  as CPU seconds until ready;
- the tools stage's resident memory after the questions, its figures bounded by
  FINQ_TOOLS_METRIC_CACHE_GROUPS (`--cache-groups`, below the groups a level asks so the
  cache churns), and the router's.

Figures go to stdout, bench/out/scale-<timestamp>.json, and the block between its markers in
bench/RESULTS.md."""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import asyncpg  # noqa: E402
import psutil  # noqa: E402

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
from services.ingest.dataset import ingest_companyfacts_files  # noqa: E402
from services.router.fiscal_calendar import FISCAL_CALENDAR_SQL  # noqa: E402
from services.router.main import DIRECTORY_SQL  # noqa: E402

OUT_DIR = REPO_ROOT / "bench" / "out"
BEGIN_MARK = "<!-- scale:figures:begin -->"
END_MARK = "<!-- scale:figures:end -->"
HEADING = """## Figures at 7, 500 and 5,000 companies (issue 27): `make bench-scale`

`bench/scale.py` grows one database from the bundled 7 companies to 500 and then 5,000,
adding synthetic companies (the real four's SEC companyfacts with new CIKs, names and
tickers, every value scaled, fiscal years shifted back, the last `--history-years` of
filings kept) through finq's own ingest, `ingest_companyfacts_files` (what
`finq ingest companyfacts` and `finq ingest sec --offline` run), in batches on two
processes. At each size it restarts the five services and asks figure questions spread
over every company held, at 1 and 64 clients, with the tools stage's figure cache bounded
(FINQ_TOOLS_METRIC_CACHE_GROUPS) below the groups asked, so most figures are read from
PostgreSQL. Run it with `make bench-scale` (about 30 minutes on two cores; it needs
`../shared/data`). The block below is written by the benchmark."""
BUNDLED = 7
LOAD_BATCH = 20  # companies per ingest_companyfacts_files call (one transaction)
INGEST_PROCESSES = 2  # the machine's two cores
# The real four, and the fiscal year end (MMDD) their SEC submissions state.
BASES: tuple[tuple[str, str], ...] = (
    ("0000320193", "0926"),
    ("0001045810", "0131"),
    ("0001652044", "1231"),
    ("0001318605", "1231"),
)
FIRST_CIK = 9_000_000
# A figure group is a few KB in the tools stage: this many bytes each is the memory the
# bound allows, against which the stage's growth over the 7-company run is judged.
GROUP_BYTES_ALLOWED = 16 * 1024
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


def name_of(index: int) -> str:
    return f"Scale Synthetic {ticker_of(index)} Corp"


def shifted_date(text: str, years: int) -> str:
    year, rest = text[:4], text[4:]
    if rest == "-02-29":
        rest = "-02-28"
    return f"{int(year) - years:04d}{rest}"


def latest_filed(base: dict[str, Any]) -> str:
    return max(
        row["filed"]
        for tags in base["facts"].values()
        for body in tags.values()
        for rows in body.get("units", {}).values()
        for row in rows
        if isinstance(row.get("filed"), str)
    )


def synthetic_companyfacts(base: dict[str, Any], index: int, history_years: int) -> dict[str, Any]:
    """One of the real four's companyfacts as another company: new CIK and name, its filings
    of the last `history_years` years only, each value times this company's factor, each
    year and date `index % 5` years earlier."""
    rng = random.Random(index)
    factor = round(rng.uniform(0.05, 2.0), 4)
    shift = index % 5
    cutoff = shifted_date(latest_filed(base), history_years)
    facts: dict[str, Any] = {}
    for taxonomy, tags in base["facts"].items():
        facts[taxonomy] = {}
        for tag, body in tags.items():
            units: dict[str, list[dict[str, Any]]] = {}
            for unit, rows in body.get("units", {}).items():
                moved = []
                for row in rows:
                    if str(row.get("filed", "")) < cutoff:
                        continue
                    row = dict(row)
                    if isinstance(row.get("val"), int | float) and not unit.startswith("shares"):
                        row["val"] = round(row["val"] * factor, 2)
                    for key in ("start", "end", "filed"):
                        if isinstance(row.get(key), str):
                            row[key] = shifted_date(row[key], shift)
                    if isinstance(row.get("fy"), int):
                        row["fy"] -= shift
                    # A frame names a calendar period of the real company's.
                    row.pop("frame", None)
                    moved.append(row)
                if moved:
                    units[unit] = moved
            if units:
                facts[taxonomy][tag] = {**body, "units": units}
    return {"cik": FIRST_CIK + index, "entityName": name_of(index), "facts": facts}


def synthetic_submissions(index: int, fiscal_year_end: str) -> dict[str, Any]:
    """The submissions JSON beside it, as `finq ingest sec` keeps one: the ticker and name
    that `ingest_companyfacts_files` reads for the company row."""
    return {
        "cik": str(FIRST_CIK + index),
        "name": name_of(index),
        "tickers": [ticker_of(index)],
        "fiscalYearEnd": fiscal_year_end,
        "filings": {"recent": {}},
    }


@cache
def read_bases(base_dir: str) -> tuple[dict[str, Any], ...]:
    """The real four's companyfacts, read once per ingest process."""
    return tuple(json.loads((Path(base_dir) / f"CIK{cik}.json").read_bytes()) for cik, _ in BASES)


def ingest_batch(
    dsn: str, folder: str, base_dir: str, indices: list[int], history_years: int
) -> tuple[int, int]:
    """In an ingest process: write these synthetic companies' companyfacts and submissions
    files, load them with finq's `ingest_companyfacts_files` in one transaction, and delete
    the files. Returns (companies, metric values) loaded."""
    bases = read_bases(base_dir)
    facts_dir, submissions_dir = Path(folder) / "companyfacts", Path(folder) / "submissions"
    facts_dir.mkdir(parents=True, exist_ok=True)
    submissions_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for index in indices:
        name = f"CIK{FIRST_CIK + index:010d}.json"
        base = index % len(BASES)
        doc = synthetic_companyfacts(bases[base], index, history_years)
        (facts_dir / name).write_text(json.dumps(doc))
        (submissions_dir / name).write_text(
            json.dumps(synthetic_submissions(index, BASES[base][1]))
        )
        paths.append(facts_dir / name)

    async def load() -> dict[str, int]:
        conn = await asyncpg.connect(dsn)
        try:
            return await ingest_companyfacts_files(conn, paths)
        finally:
            await conn.close()

    loaded = asyncio.run(load())
    for path in paths:
        path.unlink()
        (submissions_dir / path.name).unlink()
    return loaded["companies"], loaded["metric_values"]


def add_companies(
    dsn: str, folder: Path, base_dir: Path, first: int, count: int, history_years: int
) -> dict[str, Any]:
    """Synthetic companies `first`..`first + count - 1` through finq's ingest, in batches on
    INGEST_PROCESSES processes; progress on stdout as batches finish."""
    started = time.perf_counter()
    batches = [
        list(range(start, min(start + LOAD_BATCH, first + count)))
        for start in range(first, first + count, LOAD_BATCH)
    ]
    done = values = 0
    last_print = 0.0
    with ProcessPoolExecutor(max_workers=INGEST_PROCESSES) as pool:
        futures = [
            pool.submit(ingest_batch, dsn, str(folder), str(base_dir), batch, history_years)
            for batch in batches
        ]
        for future in as_completed(futures):
            companies, batch_values = future.result()
            done += companies
            values += batch_values
            elapsed = time.perf_counter() - started
            if elapsed - last_print >= 10 or done == count:
                last_print = elapsed
                left = (count - done) / (done / elapsed)
                print(
                    f"  ingested {done:,}/{count:,} companies, {values:,} values, "
                    f"{elapsed:.0f} s ({done / elapsed:.1f} companies/s, ~{left:.0f} s left)",
                    flush=True,
                )
    seconds = time.perf_counter() - started
    return {
        "companies_added": count,
        "values_loaded": values,
        "values_per_company": round(values / count) if count else 0,
        "seconds": round(seconds, 1),
        "companies_per_second": round(count / seconds, 2) if seconds else None,
    }


async def router_start_queries_ms(conn: asyncpg.Connection) -> dict[str, float]:
    """How long the two queries the router runs at start, and again after any change to
    the companies held, take on this database (services/router/main.py load_directory)."""
    timings: dict[str, float] = {}
    for name, sql in (
        ("DIRECTORY_SQL", DIRECTORY_SQL),
        ("FISCAL_CALENDAR_SQL", FISCAL_CALENDAR_SQL),
    ):
        started = time.perf_counter()
        await conn.fetch(sql)
        timings[name] = round((time.perf_counter() - started) * 1000.0, 1)
    return timings


async def database_sizes(dsn: str) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn)
    try:
        # Fresh statistics, as autovacuum would have them on a database that grew this much.
        await conn.execute("ANALYZE")
        largest = await conn.fetch(
            """SELECT c.relname, pg_total_relation_size(c.oid) AS bytes
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE c.relkind IN ('r', 'm') AND n.nspname NOT IN ('pg_catalog',
                     'information_schema', 'pg_toast')
               ORDER BY bytes DESC LIMIT 4"""
        )
        return {
            "companies": await conn.fetchval("SELECT count(*) FROM companies"),
            "metric_values": await conn.fetchval("SELECT count(*) FROM metric_values"),
            "database_mb": round(
                await conn.fetchval("SELECT pg_database_size(current_database())") / 2**20, 1
            ),
            "router_start_queries_ms": await router_start_queries_ms(conn),
            "largest_tables_mb": {
                row["relname"]: round(row["bytes"] / 2**20, 1) for row in largest
            },
        }
    finally:
        await conn.close()


async def questions_over_companies(dsn: str, count: int, seed: int) -> tuple[str, ...]:
    """`count` figure questions over the companies held, each about a year it holds: every
    company once before any twice, in an order of `seed`'s."""
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
    rng = random.Random(seed)
    held = [row for row in rows if row["year"] is not None]
    rng.shuffle(held)
    asked = []
    for n in range(count):
        row = held[n % len(held)]
        form = QUESTION_FORMS[rng.randrange(len(QUESTION_FORMS))]
        year = row["year"] - rng.randrange(0, 3)
        asked.append(form.format(name=row["display_name"], ticker=row["symbol"], year=year))
    return tuple(asked)


def cpu_seconds(pid: int) -> float:
    try:
        return round(sum(psutil.Process(pid).cpu_times()[:2]), 2)
    except psutil.Error:
        return 0.0


def measure_services(
    size: int,
    home: Path,
    postgres: PostgresServer,
    nats: NatsServer,
    args: argparse.Namespace,
    clients: list[int],
) -> dict[str, Any]:
    """Start the five services on the database as it is, ask questions at each client count,
    read their memory, stop them."""
    result: dict[str, Any] = {}
    port = free_port()
    env = {
        **service_environment(nats, postgres, port),
        "FINQ_TOOLS_METRIC_CACHE_GROUPS": str(args.cache_groups),
    }
    supervisor = Supervisor(home / f"logs-{size}", env, {}, stage_env=nats.credentials_env)
    try:
        started = time.perf_counter()
        supervisor.start()
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(url, supervisor, timeout=300)
        result["ready_seconds"] = round(time.perf_counter() - started, 1)
        assert postgres.process is not None and nats.process is not None
        processes = {s.name: s.process.pid for s in supervisor.services if s.process}
        # The router reads every company's names at start (its directory): its CPU until
        # ready, against the 7-company run's, is what the directory costs at this size.
        result["router_start_cpu_seconds"] = cpu_seconds(processes["router-0"])
        result["memory_at_start_mib"] = resident_mib(processes)
        processes["nats"] = nats.process.pid
        processes["postgres"] = postgres.process.pid
        meter = CpuMeter(processes, frozenset({"postgres"}))
        levels = []
        for number, concurrency in enumerate(clients):
            # Each level its own order of companies, so the cache meets groups it dropped.
            questions = run_async(
                questions_over_companies(postgres.dsn, args.questions + args.warmup, number)
            )
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
                    "other_cores": level.other_cores,
                }
            )
        result["levels"] = levels
        result["companies_asked"] = min(size, args.questions + args.warmup)
        result["memory_mib"] = resident_mib(processes)
        print(f"  resident memory (MiB): {result['memory_mib']}", flush=True)
    finally:
        supervisor.stop()
    return result


def run_sizes(args: argparse.Namespace, sizes: list[int], clients: list[int]) -> list[Any]:
    """One PostgreSQL and NATS for the whole run; the database grows from size to size."""
    home = Path(tempfile.mkdtemp(prefix="finq-scale-"))
    postgres = PostgresServer(home / "postgres", free_port())
    nats = NatsServer(home / "nats", free_port())
    base_dir = Path(args.data_dir) / "sec" / "companyfacts"
    results: list[dict[str, Any]] = []
    try:
        postgres.start()
        nats.start()
        run_async(
            prepare_database(postgres.dsn, load_glossary=False, service_dsn=postgres.service_dsn)
        )
        held = BUNDLED
        for size in sizes:
            print(f"\n== {size:,} companies", flush=True)
            result: dict[str, Any] = {"size": size}
            if size > held:
                print(f"adding {size - held:,} companies to the {held:,} held", flush=True)
                result["ingest"] = add_companies(
                    postgres.dsn,
                    home / "sec",
                    base_dir,
                    held - BUNDLED,
                    size - held,
                    args.history_years,
                )
                held = size
            result["database"] = run_async(database_sizes(postgres.dsn))
            print(f"  database: {result['database']}", flush=True)
            result.update(measure_services(size, home, postgres, nats, args, clients))
            for level in result["levels"]:
                print(
                    f"  c={level['clients']:<3} p50 {level['p50_ms']} ms  "
                    f"p99 {level['p99_ms']} ms  {level['qps']} q/s  "
                    f"failures {level['failures']}",
                    flush=True,
                )
            results.append(result)
    finally:
        nats.stop()
        postgres.stop()
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    return results


def one_client_p50(size: dict[str, Any]) -> float | None:
    return next((lv["p50_ms"] for lv in size["levels"] if lv["clients"] == 1), None)


def verdicts(report: dict[str, Any]) -> dict[str, Any]:
    """The issue's bars, at the largest size against the smallest."""
    first, last = report["sizes"][0], report["sizes"][-1]
    base_p50, p50 = one_client_p50(first), one_client_p50(last)
    allowed_mib = report["cache_groups"] * GROUP_BYTES_ALLOWED / 2**20
    tools_growth = last["memory_mib"].get("tools-0", 0.0) - first["memory_mib"].get("tools-0", 0.0)
    return {
        "p50_ratio": round(p50 / base_p50, 2) if p50 and base_p50 else None,
        "p50_ratio_met": bool(p50 and base_p50 and p50 <= 1.3 * base_p50),
        "tools_growth_mib": round(tools_growth, 1),
        "tools_allowed_mib": round(allowed_mib, 1),
        "tools_memory_met": tools_growth <= allowed_mib,
        "ingest_unattended": all("ingest" in s for s in report["sizes"][1:]),
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Measured {report['when']} at commit {report['commit']} "
        f"(`{' '.join(report['command'])}`): synthetic companies keep "
        f"{report['history_years']} years of filings; the tools stage is bounded to "
        f"{report['cache_groups']:,} groups of figures (FINQ_TOOLS_METRIC_CACHE_GROUPS) and "
        f"each level asks {report['questions']} questions over up to that many companies; "
        f"raw JSON `{report['json']}`. Other cores busy: CPU used outside the services, "
        "PostgreSQL and NATS while the level ran (the clients, and anything else on the "
        "machine), in cores.",
        "",
        "| companies | metric values | database MB (metric_values) | ingest s (companies/s) "
        "| clients | p50 ms | p99 ms | q/s | failures | tools MiB | router MiB "
        "| router start: CPU s, queries ms | router CPU ms/q | other cores busy |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in report["sizes"]:
        ingest = size.get("ingest")
        ingest_text = (
            f"{ingest['seconds']:,} ({ingest['companies_per_second']})" if ingest else "bundled"
        )
        database = size["database"]
        memory = size.get("memory_mib", {})
        for level in size.get("levels", []):
            lines.append(
                f"| {database['companies']:,} | {database['metric_values']:,} | "
                f"{database['database_mb']:,} "
                f"({database['largest_tables_mb'].get('metric_values', 0):,}) | "
                f"{ingest_text} | {level['clients']} | {level['p50_ms']} | {level['p99_ms']} | "
                f"{level['qps']} | {level['failures']} | {memory.get('tools-0', '')} | "
                f"{memory.get('router-0', '')} | {size['router_start_cpu_seconds']}, "
                f"{sum(database['router_start_queries_ms'].values()):,.0f} | "
                f"{level['cpu_ms_per_question'].get('router-0', '')} | "
                f"{level.get('other_cores', '')} |"
            )
    bars = report["verdicts"]
    first, last = report["sizes"][0], report["sizes"][-1]
    lines += [
        "",
        f"Bars at {last['database']['companies']:,} companies: one-client p50 "
        f"{bars['p50_ratio']}× the {first['database']['companies']:,}-company figure "
        f"(≤ 1.3×: {'met' if bars['p50_ratio_met'] else 'missed'}); tools stage "
        f"{bars['tools_growth_mib']:+} MiB over the smallest run, against "
        f"{bars['tools_allowed_mib']} MiB its bound allows "
        f"({'met' if bars['tools_memory_met'] else 'missed'}); ingest unattended with "
        f"progress ({'met' if bars['ingest_unattended'] else 'not run'}).",
    ]
    queries = "; ".join(
        f"{size['database']['companies']:,}: "
        + ", ".join(
            f"{name} {ms:,} ms" for name, ms in size["database"]["router_start_queries_ms"].items()
        )
        for size in report["sizes"]
    )
    lines += [
        "",
        "The router reads every company held at start and again before the next question "
        f"after any change to them (services/router/main.py load_directory): {queries}; "
        "ready s (all five stages): "
        + ", ".join(
            f"{s['database']['companies']:,}: {s['ready_seconds']}" for s in report["sizes"]
        )
        + ".",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="7,500,5000")
    parser.add_argument("--clients", default="1,64")
    parser.add_argument("--questions", type=int, default=1000, help="measured per level")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument(
        "--cache-groups",
        type=int,
        default=1024,
        help="FINQ_TOOLS_METRIC_CACHE_GROUPS; below the groups a level asks, so it churns",
    )
    parser.add_argument(
        "--history-years", type=int, default=3, help="years of filings a synthetic company keeps"
    )
    parser.add_argument("--data-dir", default=str(REPO_ROOT.parent / "shared" / "data"))
    parser.add_argument("--keep", action="store_true", help="keep the run's folder")
    parser.add_argument("--no-results-md", action="store_true")
    parser.add_argument(
        "--from-json", default=None, metavar="PATH", help="write RESULTS.md from a run's JSON"
    )
    args = parser.parse_args()
    if args.from_json:
        replace_block(
            BEGIN_MARK, END_MARK, markdown(json.loads(Path(args.from_json).read_text())), HEADING
        )
        print("wrote its block of bench/RESULTS.md")
        return
    sizes = sorted(int(s) for s in args.sizes.split(","))
    clients = [int(c) for c in args.clients.split(",")]
    base_dir = Path(args.data_dir) / "sec" / "companyfacts"
    missing = [cik for cik, _ in BASES if not (base_dir / f"CIK{cik}.json").is_file()]
    if sizes[-1] > BUNDLED and missing:
        raise SystemExit(
            f"bench/scale.py needs the real companies' companyfacts in {base_dir} "
            f"(missing CIK {', '.join(missing)}): give --data-dir, the folder with "
            "sec/companyfacts/ (../shared/data beside the repository by default)"
        )
    if sizes[0] < BUNDLED:
        raise SystemExit(f"sizes start at the bundled {BUNDLED} companies")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(describe_machine(), flush=True)
    report: dict[str, Any] = {
        "when": f"{datetime.now():%Y-%m-%d %H:%M}",
        "commit": git_commit(),
        "command": [Path(sys.executable).name, *sys.argv],
        "cache_groups": args.cache_groups,
        "history_years": args.history_years,
        "questions": args.questions,
    }
    started = time.perf_counter()
    report["sizes"] = run_sizes(args, sizes, clients)
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["verdicts"] = verdicts(report)
    OUT_DIR.mkdir(exist_ok=True)
    out = OUT_DIR / f"scale-{datetime.now():%Y%m%d-%H%M%S}.json"
    report["json"] = str(out.relative_to(REPO_ROOT))
    out.write_text(json.dumps(report, indent=1, default=str))
    print(f"\nwrote {out} ({report['seconds']:.0f} s in all)")
    text = markdown(report)
    print(text)
    if not args.no_results_md:
        replace_block(BEGIN_MARK, END_MARK, text, HEADING)
        print("wrote its block of bench/RESULTS.md")


if __name__ == "__main__":
    main()
