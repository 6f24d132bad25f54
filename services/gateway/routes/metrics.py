"""GET /v1/metrics/catalog: the metrics finq can be asked about, the same for everyone."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from services.gateway.catalog import CategoryName, MetricCatalog, metric_catalog
from services.gateway.dependencies import Caller
from services.gateway.openapi import error_responses
from shared.contracts.base import LINE_PATTERN

router = APIRouter()


@router.get(
    "/v1/metrics/catalog",
    response_model=MetricCatalog,
    responses=error_responses(401, 422, 429, 503),
)
async def metrics_catalog(
    caller: Caller,
    q: Annotated[
        str,
        Query(
            max_length=100,
            pattern=LINE_PATTERN,
            description="Words every listed metric's id, label, aliases, description "
            "or formula holds (none: every metric)",
        ),
    ] = "",
    category: CategoryName | None = None,
) -> MetricCatalog:
    """The metrics finq can be asked about, read-only: id, label, category, unit,
    description, the names users type, and the formula of a derived metric."""
    del caller  # the same for everyone; the key is still checked and rate-limited
    return metric_catalog(q, category)
