"""GET /v1/metrics/catalog: the metrics finq can be asked about, read-only from the catalog
every stage shares (shared/metric_catalog.py), searchable by words and by category."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel

from shared.contracts.tool_results import MetricInfo
from shared.metric_catalog import CATALOG, CATEGORIES, Metric

# The catalog's categories, as the schema's enum of the `category` parameter.
CategoryName = StrEnum("CategoryName", [(name, name) for name in CATEGORIES])  # type: ignore[misc]


class MetricCatalog(BaseModel):
    """The metrics that match, in catalog order, and every category there is."""

    categories: list[str]
    metrics: list[MetricInfo]


def _words(metric: Metric) -> str:
    fields = (metric.id, metric.label, metric.category, metric.description, metric.formula)
    return " ".join([field for field in fields if field] + list(metric.aliases)).lower()


_SEARCHED = {metric.id: _words(metric) for metric in CATALOG}


def metric_catalog(query: str, category: str | None) -> MetricCatalog:
    """Metrics of `category` (any when None) whose id, label, aliases, description or
    formula hold every word of `query`."""
    words = query.lower().split()
    return MetricCatalog(
        categories=list(CATEGORIES),
        metrics=[
            MetricInfo.of(metric)
            for metric in CATALOG
            if (category is None or metric.category == category)
            and all(word in _SEARCHED[metric.id] for word in words)
        ],
    )
