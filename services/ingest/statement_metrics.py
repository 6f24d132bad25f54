"""Statement line items to finq's metric catalog.

A label is looked up the way a user's phrase is (`MetricResolver.exact`: the catalog's
ids, labels, aliases and XBRL tag names), then in `STATEMENT_LABELS`, the few standard
statement wordings the catalog does not use. Either way the metric must fit the line:

- reported, not derived: a statement prints figures, finq computes ratios and margins
  ("Gross margin" on Apple's income statement is dollars, so it is gross profit);
- on its own statement: an instant metric on the balance sheet, an income-statement
  metric on the income statement, and so on, so a cash flow statement's "Accounts
  payable" (a change in the balance) or "Net income" (a repeat) maps to nothing;
- in its unit: EPS on a per-share row, share counts on a share-count row.

A label that names nothing, or something else, maps to None: a guess would put a wrong
figure under a metric's name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from services.ingest.statements import LineItem, Statement, StatementColumn, StatementKind
from shared.metric_catalog import METRICS_BY_ID, Metric
from shared.metric_resolver import MetricResolver, normalize_phrase

# Standard statement wordings the catalog's names and aliases do not cover, by the
# statement they appear on. Keys are written as filings print them and compared
# normalized (`normalize_phrase`).
STATEMENT_LABELS: dict[StatementKind, dict[str, str]] = {
    "income": {
        "Total cost of revenue": "cost_of_revenue",
        "Total cost of revenues": "cost_of_revenue",
        "Total cost of sales": "cost_of_revenue",
        "Total costs of revenue": "cost_of_revenue",
        # Apple's and Microsoft's gross profit line.
        "Gross margin": "gross_profit",
        "Total gross margin": "gross_profit",
        "Income before provision for income taxes": "pretax_income",
        "Other income, net": "nonoperating_income",
        "Basic net income per share": "eps_basic",
        "Diluted net income per share": "eps_diluted",
        "Net income per share, basic": "eps_basic",
        "Net income per share, diluted": "eps_diluted",
        "Cash dividends declared per common share": "dividends_per_share",
        "Total net revenue": "revenue",
        # Amazon's: its only marketing line, with no selling or sales beside it.
        "Marketing": "selling_and_marketing",
        "Total net revenues": "revenue",
    },
    "balance": {},
    "cash_flow": {
        "Common stock repurchased": "share_repurchases",
        "Repurchases of stock": "share_repurchases",
        "Common stock cash dividends paid": "dividends_paid",
        "Payments for dividends and dividend equivalents": "dividends_paid",
        "Share-based compensation expense": "stock_based_compensation",
    },
}

# Which statement a catalog category's metrics are printed on.
_STATEMENT_OF_CATEGORY: dict[str, frozenset[StatementKind]] = {
    "income_statement": frozenset({"income"}),
    "balance_sheet": frozenset({"balance"}),
    "cash_flow": frozenset({"cash_flow"}),
    # Dividends and buybacks paid are cash flow lines; dividends declared per share
    # are printed under the income statement's EPS.
    "capital_returns": frozenset({"income", "cash_flow"}),
}
# A balance sheet names the current and the non-current part of some items the same way
# ("Term debt", "Marketable securities"); the section they stand in says which.
_CURRENT_PAIRS: tuple[tuple[str, str], ...] = (
    ("current_debt", "long_term_debt"),
    ("marketable_securities_current", "marketable_securities_noncurrent"),
)
_NONCURRENT_SECTION = re.compile(r"non-?current|long-term", re.IGNORECASE)
_CURRENT_SECTION = re.compile(r"\bcurrent\b", re.IGNORECASE)
_SAYS_WHICH_PART = re.compile(r"current|long[- ]term|short[- ]term|non-?current", re.I)
# The catalog counts these payments as positive amounts (as their XBRL tags do), where a
# cash flow statement prints them as outflows in parentheses.
_PAYMENTS = frozenset({"capital_expenditures", "dividends_paid", "share_repurchases"})
# "Net income attributable to Microsoft": the parent's net income, which the catalog's
# net income is; the part attributable to noncontrolling interests is not.
_ATTRIBUTABLE_NET_INCOME = re.compile(
    r"^net (?:income|earnings)(?: \(loss\))? attributable to (?!non-?controlling)",
    re.IGNORECASE,
)
# Clauses that describe rather than name a line: "Property and equipment, net of
# accumulated depreciation of $19,800 and $17,606", "Short-term investments (including
# securities loaned of $204 and $75)", "Cash paid for income taxes, net".
_DESCRIPTIVE_PARENTHESES = re.compile(r"\s*\((?:including|net of|excluding)\b[^)]*\)", re.I)
_DESCRIPTIVE_TAIL = re.compile(r",\s*(?:net of|including|excluding)\b.*$|,\s*net$", re.I)
_PARENTHESES = re.compile(r"\s*\([^)]*\)")
# "Other income/(expense), net" would otherwise read "other income to expense".
_SLASHED_PARENTHESIS = re.compile(r"\s*/\s*(?=\()|(?<=\))\s*/\s*")
_BARE_SHARE_LABEL = re.compile(r"(basic|diluted)", re.IGNORECASE)
_PAID_FOR = re.compile(r"^(?:payments?|cash paid)\s+(?:related to|for|of)\s+", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class StatementFigure:
    """One mapped figure: the metric, the period, the amount, the label it was printed
    under and the page to cite; `per_share` and `share_count` say its unit as they do for
    its line (USD/share, shares), neither meaning USD."""

    metric_id: str
    column: StatementColumn
    value: float
    label: str
    page: int | None
    per_share: bool = False
    share_count: bool = False


@cache
def _resolver() -> MetricResolver:
    return MetricResolver.from_catalog()


@cache
def _statement_labels() -> dict[tuple[StatementKind, str], str]:
    table: dict[tuple[StatementKind, str], str] = {}
    for kind, labels in STATEMENT_LABELS.items():
        for label, metric_id in labels.items():
            table[(kind, normalize_phrase(label))] = metric_id
    return table


def metric_for(item: LineItem, kind: StatementKind) -> str | None:
    """The catalog metric a line item of a `kind` statement reports, or None."""
    for phrase in _phrases(item):
        resolution = _resolver().exact(phrase)
        candidates = (
            resolution.metric_id if resolution is not None else None,
            _statement_labels().get((kind, normalize_phrase(phrase))),
        )
        for metric_id in candidates:
            if metric_id is None:
                continue
            metric = METRICS_BY_ID.get(metric_id)
            if metric is not None and _fits(metric, item, kind):
                return _by_section(metric_id, item)
    return None


def _phrases(item: LineItem) -> Iterator[str]:
    """The label, then shorter forms of it: without descriptive clauses, without any
    parentheses. "Basic" and "Diluted" alone are named by their row kind."""
    label = _SLASHED_PARENTHESIS.sub(" ", item.label).strip()
    if _BARE_SHARE_LABEL.fullmatch(label):
        if item.per_share:
            yield f"{label} eps"
        elif item.share_count:
            yield f"{label} shares"
        return
    if _ATTRIBUTABLE_NET_INCOME.match(label):
        yield "net income"
        return
    yield label
    described = _DESCRIPTIVE_TAIL.sub("", _DESCRIPTIVE_PARENTHESES.sub("", label)).strip()
    if described and described != label:
        yield described
    bare = _PARENTHESES.sub("", described).strip()
    if bare and bare not in (label, described):
        yield bare
    # A cash flow line names what was paid for after the payment: "Payments for buying
    # back shares" is the buyback itself.
    paid_for = _PAID_FOR.sub("", bare)
    if paid_for and paid_for != bare:
        yield paid_for


def _fits(metric: Metric, item: LineItem, kind: StatementKind) -> bool:
    if metric.derived:
        return False
    if kind not in _STATEMENT_OF_CATEGORY.get(metric.category, frozenset()):
        return False
    if (metric.kind == "instant") != (kind == "balance"):
        return False
    if metric.unit == "USD/share":
        return item.per_share
    if metric.unit == "shares":
        return item.share_count
    return metric.unit == "USD" and not item.per_share and not item.share_count


def _by_section(metric_id: str, item: LineItem) -> str:
    """The current or non-current one of a pair, by the section a label like "Term debt"
    stands in; a label that says which part it is keeps its own metric."""
    if _SAYS_WHICH_PART.search(item.label) or not item.section:
        return metric_id
    for current, noncurrent in _CURRENT_PAIRS:
        if metric_id in (current, noncurrent):
            if _NONCURRENT_SECTION.search(item.section):
                return noncurrent
            if _CURRENT_SECTION.search(item.section):
                return current
    return metric_id


def statement_figures(statement: Statement) -> list[StatementFigure]:
    """Every mapped figure of a statement, one per metric and column.

    Values are as printed, except payments (capital expenditures, dividends, buybacks),
    which are made positive as the catalog counts them. A metric two rows map to with
    different amounts is left out, unless one is the parent's "Net income attributable
    to …", which wins over the consolidated line.
    """
    mapped: dict[str, list[LineItem]] = {}
    for item in statement.items:
        metric_id = metric_for(item, statement.kind)
        if metric_id is not None:
            mapped.setdefault(metric_id, []).append(item)
    if "operating_expenses" in mapped and _includes_cost_of_revenue(mapped):
        del mapped["operating_expenses"]
    figures: list[StatementFigure] = []
    for metric_id, items in mapped.items():
        item = _one_item(items)
        if item is None:
            continue
        for column, value in zip(statement.columns, item.values, strict=True):
            if value is None:
                continue
            if metric_id in _PAYMENTS:
                value = abs(value)
            figures.append(
                StatementFigure(
                    metric_id,
                    column,
                    value,
                    item.label,
                    item.page,
                    per_share=item.per_share,
                    share_count=item.share_count,
                )
            )
    return figures


def _one_item(items: list[LineItem]) -> LineItem | None:
    if len(items) == 1 or all(item.values == items[0].values for item in items):
        return items[0]
    attributable = [item for item in items if _ATTRIBUTABLE_NET_INCOME.match(item.label)]
    return attributable[0] if len(attributable) == 1 else None


def _includes_cost_of_revenue(mapped: dict[str, list[LineItem]]) -> bool:
    """Whether the operating expenses total sums cost of revenue too, as Amazon's does
    (its "Operating expenses:" open with "Cost of sales"): the catalog's operating
    expenses leave cost of revenue out."""
    costs = mapped.get("cost_of_revenue", [])
    sections = {normalize_phrase(item.section) for item in costs if item.section}
    for total in mapped["operating_expenses"]:
        name = normalize_phrase(re.sub(r"^total\s+", "", total.label, flags=re.IGNORECASE))
        if name in sections:
            return True
    return False
