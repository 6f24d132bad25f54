"""`list_metrics`: what finq can be asked, straight from the catalog every stage shares."""

from __future__ import annotations

from services.tools.sql import Fetcher
from services.tools.tool_deps import ToolDeps
from shared.contracts.tool_results import MetricInfo, ToolResult
from shared.metric_catalog import CATALOG, Metric
from shared.tools import LIST_METRICS, ListMetricsArgs


def metric_info(metric: Metric) -> MetricInfo:
    return MetricInfo.of(metric)


async def list_metrics(db: Fetcher, args: ListMetricsArgs) -> ToolResult:
    # The catalog is code, loaded into the `metrics` table from here: no query needed.
    del db
    return ToolResult(
        tool=LIST_METRICS,
        arguments=args,
        metrics=[
            metric_info(metric)
            for metric in CATALOG
            if (args.category is None or metric.category == args.category)
            and (args.metrics is None or metric.id in args.metrics)
        ],
    )


async def run(args: ListMetricsArgs, deps: ToolDeps) -> ToolResult:
    return await list_metrics(deps.db, args)
