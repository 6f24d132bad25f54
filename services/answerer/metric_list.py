"""The answer to "which metrics can I ask about?": the catalog, by category, in words.

Written without digits on purpose: the validator treats every number in an answer as a
figure that needs a fetched fact, and a list of names has none.
"""

from __future__ import annotations

from collections import defaultdict

from shared.contracts.tool_results import MetricInfo
from shared.metric_catalog import CATEGORIES

_UNIT_WORDS = {
    "USD": "US dollars",
    "USD/share": "US dollars per share",
    "%": "percent",
    "x": "times",
    "days": "days",
    "shares": "shares",
}
# Listing every entry of one category is useful; every entry of all eleven is a wall.
_EXAMPLES_PER_CATEGORY = 4


def category_words(category: str) -> str:
    return category.replace("_", " ")


def compose_metric_list(metrics: list[MetricInfo], category: str | None) -> str:
    if not metrics:
        return "finq holds no metrics in that category."
    if category is not None:
        items = "; ".join(
            f"{metric.label} ({_UNIT_WORDS.get(metric.unit, metric.unit)}"
            + (", computed by finq" if metric.formula else "")
            + ")"
            for metric in metrics
        )
        return (
            f"The {category_words(category)} metrics finq can answer: {items}. "
            "Ask for any of them by name for a company and a fiscal year or quarter."
        )
    by_category: dict[str, list[MetricInfo]] = defaultdict(list)
    for metric in metrics:
        by_category[metric.category].append(metric)
    parts = []
    for name in CATEGORIES:
        entries = by_category.get(name)
        if not entries:
            continue
        examples = ", ".join(m.label for m in entries[:_EXAMPLES_PER_CATEGORY])
        more = " and more" if len(entries) > _EXAMPLES_PER_CATEGORY else ""
        parts.append(f"{category_words(name)} ({examples}{more})")
    return (
        "finq answers metrics in these categories: "
        + "; ".join(parts)
        + '. Ask "which valuation metrics do you have?" to see one category in full.'
    )
