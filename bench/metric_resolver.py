"""Metric resolver benchmark: top-1 accuracy on hand-written metric phrases, refusal of
phrases that name no metric, and latency per phrase.

    .venv/bin/python bench/metric_resolver.py [--no-embeddings] [--repeat 200] [--warmup 3]

Reads bench/metric_phrases.tsv (phrase, expected metric id, kind) and
bench/metric_phrases_unknown.tsv (phrases that are no metric and must be refused), resolves
every phrase with `MetricResolver.from_catalog()` (exact, learned and fuzzy names), then again
with the MiniLM embedding fallback (skipped with --no-embeddings). For each run it prints
top-1 accuracy overall and per kind, the refusal rate on the unknown phrases, every miss, the
count by method and latency p50/p99/max per phrase in microseconds: after a warm-up, every
phrase (known and unknown) is resolved `repeat` times, in rounds over the whole set, each call
timed on its own with time.perf_counter_ns. Figures go to stdout and to
bench/out/metric_resolver.json.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import json
import math
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.percentiles import percentile  # noqa: E402
from shared.embeddings import MiniLMEmbedder  # noqa: E402
from shared.metric_catalog import METRICS_BY_ID  # noqa: E402
from shared.metric_resolver import (  # noqa: E402
    MetricResolver,
    UnknownMetricPhrase,
)

BENCH_DIR = Path(__file__).resolve().parent
PHRASES_FILE = BENCH_DIR / "metric_phrases.tsv"
UNKNOWN_FILE = BENCH_DIR / "metric_phrases_unknown.tsv"
OUT_DIR = BENCH_DIR / "out"
OUT_FILE = OUT_DIR / "metric_resolver.json"

PHRASES_HEADER = ("phrase", "expected_id", "kind")
UNKNOWN_HEADER = ("phrase", "note")
KINDS: tuple[str, ...] = (
    "abbreviation",
    "typo",
    "synonym",
    "plural",
    "casing_punctuation",
    "paraphrase",
)
# What a call can end in: the resolver's methods, or a refusal (UnknownMetricPhrase).
OUTCOMES: tuple[str, ...] = ("exact", "learned", "composed", "fuzzy", "embedding", "refused")

# The targets this benchmark reports against (the run without embeddings).
TARGET_TOP1 = 0.97
TARGET_P99_US = 1000.0

DEFAULT_REPEAT = 100
# A call that reaches the embedding fallback encodes the phrase with MiniLM (milliseconds).
DEFAULT_EMBEDDING_REPEAT = 10
DEFAULT_WARMUP = 3


# --- the phrase files ---------------------------------------------------------------------


@dataclass(frozen=True)
class KnownPhrase:
    phrase: str
    expected: str
    kind: str
    line: int


@dataclass(frozen=True)
class UnknownPhrase:
    phrase: str
    note: str
    line: int


def read_tsv(path: Path, header: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """(line number, fields) for every data line; `#` lines and blank lines are skipped and
    the first other line must be `header`."""
    rows: list[tuple[int, list[str]]] = []
    seen_header = False
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip() or raw.startswith("#"):
            continue
        fields = raw.split("\t")
        if not seen_header:
            if tuple(fields) != header:
                raise SystemExit(f"{path}:{number}: header {fields!r}, expected {list(header)}")
            seen_header = True
            continue
        if len(fields) != len(header) or not all(f.strip() for f in fields):
            raise SystemExit(f"{path}:{number}: {len(header)} non-empty tab-separated columns")
        rows.append((number, fields))
    return rows


def load_known(path: Path = PHRASES_FILE) -> list[KnownPhrase]:
    phrases = []
    for number, (phrase, expected, kind) in read_tsv(path, PHRASES_HEADER):
        if expected not in METRICS_BY_ID:
            raise SystemExit(f"{path}:{number}: {expected!r} is no metric id in the catalog")
        if kind not in KINDS:
            raise SystemExit(f"{path}:{number}: kind {kind!r} is not one of {', '.join(KINDS)}")
        phrases.append(KnownPhrase(phrase, expected, kind, number))
    return phrases


def load_unknown(path: Path = UNKNOWN_FILE) -> list[UnknownPhrase]:
    return [UnknownPhrase(p, note, number) for number, (p, note) in read_tsv(path, UNKNOWN_HEADER)]


# --- accuracy -----------------------------------------------------------------------------


@dataclass
class Outcome:
    phrase: str
    expected: str | None  # None for a phrase that names no metric
    kind: str  # a KINDS entry, or "unknown"
    got: str | None  # None when refused
    method: str  # an OUTCOMES entry
    confidence: float | None
    closest: list[str] = field(default_factory=list)  # what a refusal suggested


def resolve_once(
    resolver: MetricResolver, phrase: str
) -> tuple[str | None, str, float | None, list[str]]:
    try:
        found = resolver.resolve(phrase)
    except UnknownMetricPhrase as refusal:
        return None, "refused", None, list(refusal.closest)
    return found.metric_id, found.method, found.confidence, []


def evaluate(
    resolver: MetricResolver, known: list[KnownPhrase], unknown: list[UnknownPhrase]
) -> tuple[list[Outcome], list[Outcome]]:
    known_outcomes = [
        Outcome(k.phrase, k.expected, k.kind, *resolve_once(resolver, k.phrase)) for k in known
    ]
    unknown_outcomes = [
        Outcome(u.phrase, None, "unknown", *resolve_once(resolver, u.phrase)) for u in unknown
    ]
    return known_outcomes, unknown_outcomes


def ratio(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


def accuracy_report(known: list[Outcome], unknown: list[Outcome]) -> dict[str, Any]:
    hits = [o for o in known if o.got == o.expected]
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        of_kind = [o for o in known if o.kind == kind]
        right = sum(o.got == o.expected for o in of_kind)
        by_kind[kind] = {"phrases": len(of_kind), "hits": right, "top1": ratio(right, len(of_kind))}
    misses = [o for o in known if o.got != o.expected]
    refused = [o for o in unknown if o.method == "refused"]
    return {
        "phrases": len(known),
        "hits": len(hits),
        "top1": ratio(len(hits), len(known)),
        "by_kind": by_kind,
        # A wrong metric is worse than a refusal: the user gets an answer to another question.
        "wrong_metric": sum(o.got is not None for o in misses),
        "refused_known": sum(o.got is None for o in misses),
        "misses": [asdict(o) for o in misses],
        "methods": dict(collections.Counter(o.method for o in known)),
        "unknown_phrases": len(unknown),
        "unknown_refused": len(refused),
        "refusal_rate": ratio(len(refused), len(unknown)),
        "unknown_accepted": [asdict(o) for o in unknown if o.method != "refused"],
        "unknown_methods": dict(collections.Counter(o.method for o in unknown)),
    }


# --- latency ------------------------------------------------------------------------------


def summarize_us(samples_ns: list[int]) -> dict[str, float]:
    ordered = sorted(s / 1000.0 for s in samples_ns)
    return {
        "calls": len(ordered),
        "p50_us": round(percentile(ordered, 50), 2),
        "p99_us": round(percentile(ordered, 99), 2),
        "max_us": round(ordered[-1], 2) if ordered else math.nan,
        "mean_us": round(sum(ordered) / len(ordered), 2) if ordered else math.nan,
    }


def measure_latency(
    resolver: MetricResolver, phrases: list[str], repeat: int, warmup: int
) -> dict[int, list[int]]:
    """Nanoseconds per call for each phrase (by position), `repeat` calls each."""
    for _ in range(warmup):
        for phrase in phrases:
            resolve_once(resolver, phrase)
    samples: dict[int, list[int]] = {i: [] for i in range(len(phrases))}
    gc.collect()
    clock = time.perf_counter_ns
    resolve = resolver.resolve
    # Rounds over the whole set, so no phrase is timed only while its own lookups are hot.
    for _ in range(repeat):
        for index, phrase in enumerate(phrases):
            started = clock()
            # Not contextlib.suppress: its context manager would be timed with every call.
            try:  # noqa: SIM105
                resolve(phrase)
            except UnknownMetricPhrase:
                pass
            samples[index].append(clock() - started)
    return samples


def latency_report(
    samples: dict[int, list[int]], phrases: list[str], known_count: int, methods: list[str]
) -> dict[str, Any]:
    """Percentiles over all calls, over known and unknown phrases apart, by outcome, and the
    slowest phrases by their median call."""
    every = [ns for calls in samples.values() for ns in calls]
    known = [ns for i, calls in samples.items() if i < known_count for ns in calls]
    unknown = [ns for i, calls in samples.items() if i >= known_count for ns in calls]
    by_method: dict[str, list[int]] = collections.defaultdict(list)
    for index, calls in samples.items():
        by_method[methods[index]].extend(calls)
    medians = sorted(
        ((sorted(calls)[len(calls) // 2] / 1000.0, phrases[i]) for i, calls in samples.items()),
        reverse=True,
    )
    return {
        "all": summarize_us(every),
        "known": summarize_us(known),
        "unknown": summarize_us(unknown),
        "by_method": {m: summarize_us(by_method[m]) for m in OUTCOMES if by_method.get(m)},
        "slowest_by_median_us": [
            {"phrase": phrase, "median_us": round(median, 2)} for median, phrase in medians[:10]
        ],
    }


# --- one run --------------------------------------------------------------------------------


def run(
    name: str,
    resolver: MetricResolver,
    known: list[KnownPhrase],
    unknown: list[UnknownPhrase],
    repeat: int,
    warmup: int,
) -> dict[str, Any]:
    known_outcomes, unknown_outcomes = evaluate(resolver, known, unknown)
    accuracy = accuracy_report(known_outcomes, unknown_outcomes)
    phrases = [k.phrase for k in known] + [u.phrase for u in unknown]
    methods = [o.method for o in known_outcomes + unknown_outcomes]
    samples = measure_latency(resolver, phrases, repeat, warmup)
    latency = latency_report(samples, phrases, len(known), methods)
    report = {"name": name, "repeat": repeat, "warmup": warmup, **accuracy, "latency": latency}
    print_run(report)
    return report


def percent(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value * 100:.1f}%"


def print_run(report: dict[str, Any]) -> None:
    print(f"\n== {report['name']} ==")
    print(
        f"top-1 accuracy  {percent(report['top1'])}  ({report['hits']}/{report['phrases']}; "
        f"{report['wrong_metric']} wrong metric, {report['refused_known']} refused)"
    )
    for kind, figures in report["by_kind"].items():
        print(
            f"  {kind:<20} {percent(figures['top1']):>6}  ({figures['hits']}/{figures['phrases']})"
        )
    print(
        f"refusal rate on unknown phrases  {percent(report['refusal_rate'])}  "
        f"({report['unknown_refused']}/{report['unknown_phrases']})"
    )
    for accepted in report["unknown_accepted"]:
        print(
            f"  ACCEPTED {accepted['phrase']!r} as {accepted['got']} "
            f"({accepted['method']}, {accepted['confidence']})"
        )
    methods = ", ".join(
        f"{m} {report['methods'].get(m, 0)}" for m in OUTCOMES if report["methods"].get(m)
    )
    print(f"by method (known phrases): {methods}")

    misses = report["misses"]
    print(f"misses ({len(misses)})")
    if misses:
        width = min(48, max(len(repr(m["phrase"])) for m in misses))
        print(f"  {'phrase':<{width}}  {'expected':<36} {'got':<36} method     confidence")
    for miss in misses:
        got = miss["got"] or "-"
        confidence = "" if miss["confidence"] is None else f"{miss['confidence']:.3f}"
        closest = f"  closest: {', '.join(miss['closest'])}" if miss["closest"] else ""
        print(
            f"  {miss['phrase']!r:<{width}}  {miss['expected']:<36} {got:<36} "
            f"{miss['method']:<10} {confidence}{closest}"
        )

    latency = report["latency"]
    print(
        f"latency per phrase, µs ({report['repeat']} calls each after {report['warmup']} warm-up)"
    )
    for label in ("all", "known", "unknown"):
        figures = latency[label]
        print(
            f"  {label:<9} p50 {figures['p50_us']:>9.1f}  p99 {figures['p99_us']:>9.1f}  "
            f"max {figures['max_us']:>9.1f}  ({figures['calls']} calls)"
        )
    for method, figures in latency["by_method"].items():
        print(
            f"  {method:<9} p50 {figures['p50_us']:>9.1f}  p99 {figures['p99_us']:>9.1f}  "
            f"max {figures['max_us']:>9.1f}  ({figures['calls']} calls)"
        )
    slowest = ", ".join(
        f"{s['phrase']!r} {s['median_us']:.0f}" for s in latency["slowest_by_median_us"][:5]
    )
    print(f"  slowest phrases by median: {slowest}")


# --- orchestration ------------------------------------------------------------------------


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def describe_machine() -> dict[str, Any]:
    cpu_model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu_model": cpu_model,
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def phrase_set_summary(known: list[KnownPhrase], unknown: list[UnknownPhrase]) -> dict[str, Any]:
    ids = {k.expected for k in known}
    return {
        "phrases_file": str(PHRASES_FILE.relative_to(REPO_ROOT)),
        "unknown_file": str(UNKNOWN_FILE.relative_to(REPO_ROOT)),
        "phrases": len(known),
        "by_kind": {kind: sum(k.kind == kind for k in known) for kind in KINDS},
        "metric_ids": len(ids),
        "categories": sorted({METRICS_BY_ID[i].category for i in ids}),
        "unknown_phrases": len(unknown),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--no-embeddings", action="store_true", help="skip the run with the MiniLM fallback"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=DEFAULT_REPEAT,
        help=f"timed calls per phrase without embeddings (default {DEFAULT_REPEAT})",
    )
    parser.add_argument(
        "--embedding-repeat",
        type=int,
        default=DEFAULT_EMBEDDING_REPEAT,
        help=f"timed calls per phrase with embeddings (default {DEFAULT_EMBEDDING_REPEAT})",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=DEFAULT_WARMUP,
        help=f"unmeasured passes over all phrases before timing (default {DEFAULT_WARMUP})",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.embedding_repeat < 1 or args.warmup < 0:
        raise SystemExit("--repeat and --embedding-repeat take positive integers")

    known, unknown = load_known(), load_unknown()
    summary = phrase_set_summary(known, unknown)
    machine = describe_machine()
    print("machine")
    for key, value in machine.items():
        print(f"  {key:<13} {value}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(
        f"phrases: {summary['phrases']} known over {summary['metric_ids']} metric ids "
        f"({', '.join(f'{k} {n}' for k, n in summary['by_kind'].items())}); "
        f"{summary['unknown_phrases']} unknown",
        flush=True,
    )

    started = time.perf_counter()
    plain = MetricResolver.from_catalog()
    plain_build_s = time.perf_counter() - started
    without = run("without embeddings", plain, known, unknown, args.repeat, args.warmup)
    without["build_seconds"] = round(plain_build_s, 4)

    with_embeddings: dict[str, Any] | None = None
    if not args.no_embeddings:
        started = time.perf_counter()
        embedder = MiniLMEmbedder.load()
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        fallback = MetricResolver.from_catalog(embedder=embedder)
        build_s = time.perf_counter() - started
        print(f"\nMiniLM loaded in {load_s:.1f} s; catalog names encoded in {build_s:.1f} s")
        with_embeddings = run(
            "with MiniLM embeddings", fallback, known, unknown, args.embedding_repeat, args.warmup
        )
        with_embeddings["embedder_load_seconds"] = round(load_s, 2)
        with_embeddings["build_seconds"] = round(build_s, 2)

    p99 = without["latency"]["all"]["p99_us"]
    targets = [
        {
            "target": f"top-1 >= {TARGET_TOP1:.0%} without embeddings",
            "value": round(without["top1"], 4),
            "verdict": verdict(without["top1"] >= TARGET_TOP1),
        },
        {
            "target": f"p99 <= {TARGET_P99_US / 1000:g} ms per phrase without embeddings",
            "value": f"{p99:.1f} µs",
            "verdict": verdict(p99 <= TARGET_P99_US),
        },
    ]
    print("\ntargets")
    for target in targets:
        print(f"  {target['verdict']:<4} {target['target']:<45} measured {target['value']}")
    if with_embeddings is not None:
        print(
            f"  (with embeddings: top-1 {percent(with_embeddings['top1'])}, refusals "
            f"{percent(with_embeddings['refusal_rate'])}, p99 "
            f"{with_embeddings['latency']['all']['p99_us']:.0f} µs)"
        )

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    OUT_FILE.write_text(
        json.dumps(
            {
                "timestamp": datetime.now().astimezone().isoformat(),
                "command": [Path(sys.executable).name, *sys.argv],
                "machine": machine,
                "phrase_set": summary,
                "without_embeddings": without,
                "with_embeddings": with_embeddings,
                "targets": targets,
            },
            indent=2,
            ensure_ascii=False,
        )
    )
    print(f"\nwrote {OUT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
