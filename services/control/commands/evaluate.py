"""`finq eval [golden|retrieval|documents]`: the golden questions through a pipeline, scored;
document search on filings; answers quoted from filings."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from services.control.commands import Subparsers
from services.control.commands.database_setup import prepare_database
from services.control.eval_splits import DOCUMENT_ONLY_SPLITS, DOCUMENT_SPLITS
from services.control.progress import Progress
from services.control.servers import PostgresServer, ServerError
from services.control.settings import ControlSettings

T = TypeVar("T")


def register(subparsers: Subparsers) -> None:
    evaluate = subparsers.add_parser(
        "eval",
        help="golden: the golden questions through the live pipeline, scored; retrieval: "
        "document search on filings (hit@1, hit@5, MRR with and without temporal filters); "
        "documents: answers quoted from filings (accuracy, grounding, hit@k per split)",
    )
    evaluate.add_argument(
        "suite", nargs="?", default="golden", choices=["golden", "retrieval", "documents"]
    )
    evaluate.add_argument("--data-dir", help="retrieval: the reference data (../shared/data)")
    evaluate.add_argument("--dsn", help="retrieval: a database to use instead of its own")
    evaluate.add_argument(
        "--passages",
        action="store_true",
        help="documents: answer with search and the passage answerer alone, not the pipeline",
    )
    evaluate.add_argument(
        "--home",
        help="documents: the folder of the pipeline's own servers, kept between runs so the "
        "filings are read once (default: a new temporary folder)",
    )
    evaluate.add_argument("--url", help="a running gateway (default: start one of its own)")
    evaluate.add_argument("--golden", help="golden questions JSONL (default: the bundled set)")
    evaluate.add_argument("--report", help="write the JSON report here")
    evaluate.add_argument("--concurrency", type=int, default=4)
    evaluate.add_argument(
        "--key",
        help="with --url: ask as this key's user (the demo user's, whose portfolio the "
        "portfolio questions ask about); a pipeline of its own asks as its demo user",
    )
    evaluate.add_argument(
        "--split",
        choices=[*DOCUMENT_SPLITS, "all"],
        default="all",
        help="dev (the questions rules are tuned on), heldout (never tuned on), outside "
        "(written outside the project), the documents' later outside splits "
        f"({', '.join(DOCUMENT_ONLY_SPLITS)}), or all",
    )
    evaluate.add_argument(
        "--write-levels",
        action="store_true",
        help="golden: measure every bundled question on a pipeline of its own and write "
        "each split's levels to services/control/eval_levels.json (what the test gates on)",
    )
    evaluate.add_argument(
        "--check-levels",
        action="store_true",
        help="golden: exit 1 when a split falls more than a point below its measured level, "
        "or shows more figures for another question",
    )
    evaluate.add_argument("--min-intent-accuracy", type=float, default=0.95, help="dev split")
    evaluate.add_argument("--min-answer-correctness", type=float, default=0.95, help="dev split")
    evaluate.add_argument("--min-heldout-answer-correctness", type=float, default=0.0)
    evaluate.set_defaults(handler=command_eval)


def command_eval(args: argparse.Namespace, settings: ControlSettings) -> int:
    if args.suite == "retrieval":
        return command_eval_retrieval(args, settings)
    if args.suite == "documents":
        return command_eval_documents(args, settings)
    return command_eval_golden(args)


def _filings_data_dir(args: argparse.Namespace, settings: ControlSettings) -> Path | None:
    data_dir = Path(args.data_dir) if args.data_dir else settings.sec_offline_dir.parent
    if not (data_dir / "filings").is_dir():
        print(f"no filings under {data_dir}: pass --data-dir (../shared/data)", file=sys.stderr)
        return None
    return data_dir


def _on_a_database(
    dsn: str | None, prefix: str, evaluate: Callable[[str], Awaitable[T]]
) -> T | None:
    """`evaluate(dsn)` on the database `dsn` names, or on a migrated PostgreSQL of its own
    started under a temporary folder and stopped afterwards; None when that cannot start."""
    import tempfile

    from services.control.servers import free_port

    if dsn:
        return asyncio.run(evaluate(dsn))
    home = Path(tempfile.mkdtemp(prefix=prefix))
    postgres = PostgresServer(home / "postgres", free_port())
    try:
        print(f"starting PostgreSQL of its own under {home}", flush=True)
        postgres.start()
        asyncio.run(prepare_database(postgres.dsn, load_glossary=False))
        return asyncio.run(evaluate(postgres.dsn))
    except ServerError as error:
        print(f"PostgreSQL could not start: {error}", file=sys.stderr)
        return None
    finally:
        postgres.stop()


def command_eval_documents(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq eval documents`: through a pipeline of its own (kept under --home when given),
    or with --passages the passage answerer alone on a database of its own unless --dsn names
    one. Exit 1 when an answer raised or finq could not start."""
    from services.control.document_eval import evaluate_documents, evaluate_documents_in_pipeline

    data_dir = _filings_data_dir(args, settings)
    if data_dir is None:
        return 1
    report_path = Path(args.report) if args.report else None
    split = args.split or "all"
    if not args.passages:
        home = Path(args.home) if args.home else None
        try:
            report = evaluate_documents_in_pipeline(data_dir, report_path, split, home)
        except ServerError as error:
            print(f"finq could not start: {error}", file=sys.stderr)
            return 1
        return 1 if report.overall.errors else 0
    passages = _on_a_database(
        args.dsn,
        "finq-eval-documents-",
        lambda dsn: evaluate_documents(dsn, data_dir, report_path, split),
    )
    return 1 if passages is None or passages.overall.errors else 0


async def evaluate_retrieval(dsn: str, data_dir: Path, report_path: Path | None) -> bool:
    """Ingest the filings the retrieval questions are about (kept if already held), then
    score search on them with and without temporal filters. True when hit@5 ≥ 80%."""
    from services.control.retrieval_eval import (
        RankedHit,
        SearchFilters,
        format_report,
        load_financebench_questions,
        load_team_questions,
        report_json,
        run_retrieval_eval,
    )
    from services.ingest.documents import ingest_file
    from services.tools.document_search import DocumentSearch
    from shared.db import create_pool
    from shared.embeddings import EmbeddingSettings, load_embedder
    from shared.tools import FILINGS_COLLECTION, SearchDocumentsArgs

    questions = load_team_questions() + load_financebench_questions(data_dir)
    needed = sorted({(q.symbol, q.document) for q in questions})
    pool = await create_pool(dsn, min_size=1, max_size=4)
    try:
        embedder = await asyncio.to_thread(load_embedder, EmbeddingSettings())
        for symbol, name in needed:
            path = data_dir / "filings" / symbol / name
            stored = await ingest_file(
                pool, embedder, path, collection=FILINGS_COLLECTION, folder_symbol=symbol
            )
            how = "held" if stored.reused else f"{stored.seconds:.1f} s"
            print(f"{stored.title}: {stored.chunks} chunks ({how})", flush=True)
        documents = DocumentSearch(embedder)

        async def search(query: str, filters: SearchFilters | None) -> list[RankedHit]:
            args = SearchDocumentsArgs(
                query=query[:500],
                symbols=list(filters.symbols) if filters and filters.symbols else None,
                forms=list(filters.forms) if filters and filters.forms else None,
                fiscal_year=filters.fiscal_year if filters else None,
                limit=10,
            )
            result = await documents.search(pool, args)
            return [
                RankedHit(p.source_name or p.title, p.page or 0, p.page_end)
                for p in result.passages
            ]

        reports = await run_retrieval_eval(search, data_dir)
    finally:
        await pool.close()
    print(format_report(reports))
    if report_path is not None:
        text = json.dumps(report_json(reports), indent=2)
        await asyncio.to_thread(report_path.write_text, text)
        print(f"wrote {report_path} (it quotes FinanceBench questions: do not commit it)")
    return reports[0].meets_target


def command_eval_retrieval(args: argparse.Namespace, settings: ControlSettings) -> int:
    """`finq eval retrieval`: on a database of its own unless --dsn names one."""
    data_dir = _filings_data_dir(args, settings)
    if data_dir is None:
        return 1
    report = Path(args.report) if args.report else None
    met = _on_a_database(
        args.dsn,
        "finq-eval-retrieval-",
        lambda dsn: evaluate_retrieval(dsn, data_dir, report),
    )
    return 0 if met else 1


def command_eval_golden(args: argparse.Namespace) -> int:
    """`finq eval`: the golden questions scored; `--write-levels` records what every bundled
    question measured as eval_levels.json, `--check-levels` exits 1 below those levels."""
    from services.control.evaluation import (
        LEVELS_FILE,
        build_report,
        format_report,
        levels_missed,
        load_levels,
        load_questions,
        run_golden,
        thresholds_missed,
        write_levels,
        write_report,
    )
    from services.control.own_pipeline import own_pipeline

    if (args.write_levels or args.check_levels) and (
        args.url or args.golden or args.split != "all"
    ):
        # Levels are what the test gates on: every bundled question, offline, on a pipeline
        # like the test's; a running gateway may have a model configured or other data.
        print(
            "--write-levels and --check-levels take every bundled question on a pipeline "
            "of its own: leave out --url, --golden and --split",
            file=sys.stderr,
        )
        return 2
    if args.split in DOCUMENT_ONLY_SPLITS:
        print(
            f"{args.split} is a split of the document questions: finq eval documents",
            file=sys.stderr,
        )
        return 2
    questions = load_questions(args.split, Path(args.golden) if args.golden else None)
    progress = Progress()
    if args.url:
        outcomes = asyncio.run(
            run_golden(args.url, questions, args.concurrency, progress=progress, key=args.key)
        )
    else:
        try:
            with own_pipeline(progress) as pipeline:
                outcomes = asyncio.run(
                    run_golden(
                        pipeline.url,
                        questions,
                        args.concurrency,
                        progress=progress,
                        key=pipeline.key,
                    )
                )
        except ServerError as error:
            print(f"finq could not start: {error}", file=sys.stderr)
            return 1
    report = build_report(outcomes)
    print(format_report(report))
    if args.report:
        write_report(report, Path(args.report))
        print(f"wrote {args.report}")
    if args.write_levels:
        unanswered = [outcome.golden.id for outcome in outcomes if outcome.body is None]
        if unanswered:
            # A deadline missed on a busy machine is not a level: it would let the pipeline
            # fall that far with no test noticing.
            print(f"levels not written: no answer to {unanswered}", file=sys.stderr)
            return 1
        levels = write_levels(report)
        print(f"wrote {LEVELS_FILE}:\n{json.dumps(levels['splits'], indent=2)}")
        # Measuring is the point here: the thresholds below gate a run, not a measurement.
        return 0
    if args.check_levels:
        below = levels_missed(report, load_levels())
        if below:
            print("below the measured levels: " + "; ".join(below))
            return 1
    missed = thresholds_missed(
        report,
        args.min_intent_accuracy,
        args.min_answer_correctness,
        args.min_heldout_answer_correctness,
    )
    if missed:
        print("below threshold: " + "; ".join(missed))
        return 1
    return 0
