"""Capacity on paper for a planned workload, from the figures the benchmarks measured.

    .venv/bin/python bench/capacity.py [--qps 1000] [--search-share 0.2] [--companies 5000]
                                       [--chunks 1000000] [--utilization 0.6]

Reads the newest raw results in bench/out:

- pipeline-*.json (bench/pipeline.py): each stage's CPU per figure question at the busiest
  level, NATS's and PostgreSQL's;
- search-scale-*.json (bench/search_scale.py) at the planned number of chunks: PostgreSQL
  CPU and the tools' own CPU per search by filter, the query's embedding, the database and
  vector index sizes;
- scale-*.json (bench/scale.py), when there is one: the figures database and the tools'
  memory at the planned number of companies.

Each unit is a process on one core, planned at `--utilization` of it, with at least two
replicas (one may be restarting). PostgreSQL instances (CloudNativePG: one primary, the
rest streaming replicas serving reads) of `--pg-cores` cores each; a NATS cluster of
`--nats-cores`-core nodes, streams replicated three times (each message written on three
nodes, so three times the single node's CPU). It writes the plan into bench/RESULTS.md
between its markers, and to bench/out/capacity-<timestamp>.json."""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.results_file import replace_block  # noqa: E402

OUT_DIR = REPO_ROOT / "bench" / "out"
BEGIN_MARK = "<!-- capacity:plan:begin -->"
END_MARK = "<!-- capacity:plan:end -->"
HEADING = """## Capacity for the planned workload (issue 27): `make bench-capacity`

`bench/capacity.py` turns the measured per-unit costs (the pipeline's CPU per question by
stage, search's CPU per query at a million chunks, the figures' database at 5,000
companies) into replicas, PostgreSQL instances and a NATS cluster for a planned workload.
It writes the block below itself; the assumptions are its options, printed with it."""
STAGES = ("gateway", "router", "tools", "answerer", "validator")
REPLICATION = 3  # JetStream streams replicated on three nodes
MIN_REPLICAS = 2


def newest(pattern: str, wanted: dict[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    """The newest bench/out file matching `pattern` whose fields match `wanted`."""
    for path in sorted(OUT_DIR.glob(pattern), reverse=True):
        report = json.loads(path.read_text())
        if all(report.get(key) == value for key, value in (wanted or {}).items()):
            return path, report
    raise SystemExit(f"no {pattern} in {OUT_DIR} matching {wanted or {}}: run its benchmark")


def stage_cpu(pipeline: dict[str, Any]) -> dict[str, float]:
    """CPU ms per figure question by process, at the busiest level measured (steady state:
    batching at high load makes it the lowest per question, and the plan's load is high)."""
    busiest = max(pipeline["pipeline"], key=lambda level: level["concurrency"])
    return {
        name.removesuffix("-0"): float(value)
        for name, value in busiest["cpu_ms_per_question"].items()
    }


def replicas(cpu_ms: float, qps: float, utilization: float) -> int:
    return max(MIN_REPLICAS, math.ceil(qps * cpu_ms / 1000 / utilization))


def plan(
    pipeline: dict[str, Any],
    search: dict[str, Any],
    figures: dict[str, Any] | None,
    args: argparse.Namespace,
) -> dict[str, Any]:
    cpu = stage_cpu(pipeline)
    mix = {kind: float(share) for kind, share in (p.split(":") for p in args.filter_mix.split(","))}
    searches = search["search"]

    def mixed(field: str) -> float:
        return sum(share * float(searches[kind][field]) for kind, share in mix.items())

    embedding_ms = sum(
        share * searches[kind]["query_embedding"]["p50_ms"] for kind, share in mix.items()
    )
    # The bench process embedded the query itself; in finq the ingest stage does.
    tools_search_ms = mixed("bench_process_cpu_ms_per_search") - embedding_ms
    share = args.search_share
    per_question = {stage: cpu[stage] for stage in STAGES}
    per_question["tools"] = (1 - share) * cpu["tools"] + share * tools_search_ms
    per_question["ingest (query embedding)"] = share * embedding_ms
    postgres_ms = (1 - share) * cpu["postgres"] + share * (
        cpu["postgres"] + mixed("postgres_cpu_ms_per_search")
    )
    nats_ms = cpu["nats"] * REPLICATION

    stages = [
        {
            "process": stage,
            "cpu_ms_per_question": round(ms, 2),
            "replicas": replicas(ms, args.qps, args.utilization),
        }
        for stage, ms in per_question.items()
    ]
    pg_cores = args.qps * postgres_ms / 1000 / args.utilization
    pg_instances = max(3, 1 + math.ceil(pg_cores / args.pg_cores))
    nats_cores = args.qps * nats_ms / 1000 / args.utilization
    nats_nodes = max(3, math.ceil(nats_cores / args.nats_cores))
    nats_nodes += 1 - nats_nodes % 2  # an odd number keeps a quorum
    sizes = search["sizes"]
    chunks_scale = args.chunks / search["chunks"]
    vector_index_gb = search["vector_index"]["index_mb"] * chunks_scale / 1024
    chunks_gb = sizes["chunks_with_indexes_mb"] * chunks_scale / 1024
    figures_gb = None
    if figures is not None:
        # The largest size measured, scaled by companies (the figures grow with them).
        largest = max(figures["sizes"], key=lambda size: size["database"]["companies"])["database"]
        figures_gb = largest["database_mb"] / 1024 * args.companies / largest["companies"]
    return {
        "workload": {
            "qps": args.qps,
            "search_share": share,
            "filter_mix": mix,
            "companies": args.companies,
            "chunks": args.chunks,
            "utilization": args.utilization,
        },
        "stages": stages,
        "postgres": {
            "cpu_ms_per_question": round(postgres_ms, 2),
            "cores": round(pg_cores, 1),
            "cores_per_instance": args.pg_cores,
            "instances": pg_instances,
            "vector_index_gb": round(vector_index_gb, 1),
            "chunks_gb": round(chunks_gb, 1),
            "figures_gb": round(figures_gb, 2) if figures_gb is not None else None,
            # The vector index must stay in memory for its latency (each search reads ten of
            # its lists, any ten): each instance holds it.
            "memory_gb_per_instance": math.ceil(2 * vector_index_gb + 4),
        },
        "nats": {
            "cpu_ms_per_question": round(nats_ms, 2),
            "cores": round(nats_cores, 1),
            "cores_per_node": args.nats_cores,
            "nodes": nats_nodes,
        },
    }


def markdown(result: dict[str, Any], sources: list[str]) -> str:
    work = result["workload"]
    mix = ", ".join(f"{kind} {share:.0%}" for kind, share in work["filter_mix"].items())
    lines = [
        f"Planned workload: **{work['qps']:,} questions/s**, {work['search_share']:.0%} of them "
        f"searching filings ({mix}), {work['companies']:,} companies, {work['chunks']:,} "
        f"chunks; each process planned at {work['utilization']:.0%} of one core, at least "
        f"{MIN_REPLICAS} replicas. Written {datetime.now():%Y-%m-%d %H:%M} from "
        + ", ".join(f"`{s}`" for s in sources)
        + ".",
        "",
        "| process | CPU ms / question (measured mix) | replicas |",
        "|---|---|---|",
    ]
    lines += [
        f"| {s['process']} | {s['cpu_ms_per_question']} | {s['replicas']} |"
        for s in result["stages"]
    ]
    pg, nats = result["postgres"], result["nats"]
    figures = (
        f"{pg['figures_gb']} GB of figures"
        if pg["figures_gb"] is not None
        else "figures not measured"
    )
    lines += [
        "",
        f"- **PostgreSQL (CloudNativePG)**: {pg['cpu_ms_per_question']} CPU ms per question → "
        f"{pg['cores']} cores at {work['utilization']:.0%}: **{pg['instances']} instances** of "
        f"{pg['cores_per_instance']} cores (one primary, the rest replicas serving reads through "
        f"`FINQ_DATABASE_READ_URL`), each with ≥ {pg['memory_gb_per_instance']} GB of memory so "
        f"the {pg['vector_index_gb']} GB vector index stays cached; storage "
        f"{pg['chunks_gb']} GB of chunks with their indexes and {figures}, before WAL and backups.",
        f"- **NATS**: {nats['cpu_ms_per_question']} CPU ms per question with streams replicated "
        f"{REPLICATION} times → {nats['cores']} cores: **a cluster of {nats['nodes']} nodes** of "
        f"{nats['cores_per_node']} cores.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qps", type=float, default=1000)
    parser.add_argument("--search-share", type=float, default=0.2)
    parser.add_argument(
        "--filter-mix", default="unfiltered:0.2,company:0.4,company+year:0.4",
        help="how searches are filtered, as kind:share pairs",
    )  # fmt: skip
    parser.add_argument("--companies", type=int, default=5000)
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--utilization", type=float, default=0.6)
    parser.add_argument("--pg-cores", type=int, default=8)
    parser.add_argument("--nats-cores", type=int, default=4)
    parser.add_argument("--no-results-md", action="store_true")
    args = parser.parse_args()
    pipeline_path, pipeline = newest("pipeline-*.json")
    search_path, search = newest("search-scale-*.json", {"chunks": args.chunks})
    figures: dict[str, Any] | None = None
    sources = [pipeline_path.name, search_path.name]
    try:
        figures_path, figures = newest("scale-*.json")
        sources.append(figures_path.name)
    except SystemExit:
        print("no bench/scale.py results: the figures database is left out")
    result = plan(pipeline, search, figures, args)
    text = markdown(result, sources)
    print(text)
    OUT_DIR.mkdir(exist_ok=True)
    out = OUT_DIR / f"capacity-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps({**result, "sources": sources}, indent=1))
    print(f"wrote {out}")
    if not args.no_results_md:
        replace_block(BEGIN_MARK, END_MARK, text, HEADING)
        print("wrote the plan into bench/RESULTS.md")


if __name__ == "__main__":
    main()
