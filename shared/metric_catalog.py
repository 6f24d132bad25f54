"""The metrics finq knows: ids, labels, the names users type, and where XBRL keeps them.

Every stage reads this one table: the router matches the aliases, the tools
label the figures, the ingest picks the XBRL tags. `xbrl_tags` are ordered
fallbacks (first tag with a value for a year wins, see
`services.ingest.companyfacts`); they were chosen by reading which us-gaap tags
Apple, NVIDIA, Alphabet and Tesla actually file in each year.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

MetricKind = Literal["flow", "instant"]


@dataclass(frozen=True)
class Metric:
    id: str
    label: str
    category: str
    unit: str  # "USD" or "USD/share"
    description: str
    formula: str | None
    aliases: tuple[str, ...]  # lowercase names users type
    xbrl_tags: tuple[str, ...]  # us-gaap tags, most preferred first
    kind: MetricKind  # flow: over a period (income, cash flow); instant: at a date (balance)


CATALOG: tuple[Metric, ...] = (
    Metric(
        id="revenue",
        label="Revenue",
        category="income_statement",
        unit="USD",
        description="Total revenue (net sales) for the fiscal year.",
        formula=None,
        aliases=(
            "revenues",
            "total revenue",
            "total revenues",
            "net revenue",
            "net revenues",
            "sales",
            "net sales",
            "total net sales",
            "top line",
            "turnover",
        ),
        # Apple: SalesRevenueNet to FY2017, Revenues FY2016-FY2018, then the ASC 606 tag;
        # Tesla: Revenues (its SalesRevenueGoodsNet is automotive only, a partial figure).
        xbrl_tags=(
            "RevenueFromContractWithCustomerExcludingAssessedTax",
            "Revenues",
            "SalesRevenueNet",
            "SalesRevenueGoodsNet",
        ),
        kind="flow",
    ),
    Metric(
        id="net_income",
        label="Net income",
        category="income_statement",
        unit="USD",
        description="Net income (loss) attributable to the company for the fiscal year.",
        formula=None,
        aliases=(
            "net earnings",
            "net loss",
            "net income loss",
            "earnings",
            "profit",
            "net profit",
            "bottom line",
        ),
        # ProfitLoss also counts noncontrolling interests, so it is only a fallback.
        xbrl_tags=("NetIncomeLoss", "ProfitLoss"),
        kind="flow",
    ),
    Metric(
        id="gross_profit",
        label="Gross profit",
        category="income_statement",
        unit="USD",
        description=(
            "Revenue minus cost of revenue for the fiscal year; where the income statement "
            "has no gross-profit line it is derived as revenue minus cost of revenue."
        ),
        formula=None,
        # "gross margin" is deliberately absent: users mean the percentage by it.
        aliases=("gross income",),
        # Alphabet reports no GrossProfit in any year: see DERIVATIONS in the ingest.
        xbrl_tags=("GrossProfit",),
        kind="flow",
    ),
    Metric(
        id="operating_income",
        label="Operating income",
        category="income_statement",
        unit="USD",
        description="Operating income (loss) for the fiscal year.",
        formula=None,
        aliases=(
            "operating profit",
            "operating loss",
            "operating earnings",
            "income from operations",
        ),
        xbrl_tags=("OperatingIncomeLoss",),
        kind="flow",
    ),
    Metric(
        id="research_and_development",
        label="Research and development expense",
        category="income_statement",
        unit="USD",
        description="Research and development expense for the fiscal year.",
        formula=None,
        aliases=(
            "r&d",
            "r&d expense",
            "r&d expenses",
            "r&d spending",
            "research and development",
            "research and development expenses",
            "research spending",
        ),
        xbrl_tags=(
            "ResearchAndDevelopmentExpense",
            "ResearchAndDevelopmentExpenseExcludingAcquiredInProcessCost",
        ),
        kind="flow",
    ),
    Metric(
        id="total_assets",
        label="Total assets",
        category="balance_sheet",
        unit="USD",
        description="Total assets at the end of the fiscal year.",
        formula=None,
        aliases=("assets",),
        xbrl_tags=("Assets",),
        kind="instant",
    ),
    Metric(
        id="total_liabilities",
        label="Total liabilities",
        category="balance_sheet",
        unit="USD",
        description=(
            "Total liabilities at the end of the fiscal year; where the balance sheet has no "
            "total-liabilities line it is derived as total liabilities and stockholders' "
            "equity minus stockholders' equity."
        ),
        formula=None,
        # Not "debt" or "total debt": debt is only part of the liabilities.
        aliases=("liabilities",),
        # NVIDIA to FY2014 and Alphabet for 2014 have no Liabilities: see DERIVATIONS.
        xbrl_tags=("Liabilities",),
        kind="instant",
    ),
    Metric(
        id="stockholders_equity",
        label="Stockholders' equity",
        category="balance_sheet",
        unit="USD",
        description="Total stockholders' equity at the end of the fiscal year.",
        formula=None,
        aliases=(
            "stockholders equity",
            "stockholder equity",
            "shareholders equity",
            "shareholder equity",
            "total stockholders equity",
            "total shareholders equity",
            "total equity",
            "equity",
            "book value",
        ),
        xbrl_tags=(
            "StockholdersEquity",
            "StockholdersEquityIncludingPortionAttributableToNoncontrollingInterest",
        ),
        kind="instant",
    ),
    Metric(
        id="operating_cash_flow",
        label="Operating cash flow",
        category="cash_flow",
        unit="USD",
        description="Net cash provided by (used in) operating activities for the fiscal year.",
        formula=None,
        aliases=(
            "operating cash flows",
            "cash from operations",
            "cash flow from operations",
            "cash flow from operating activities",
            "cash from operating activities",
            "net cash from operating activities",
            "net cash provided by operating activities",
            "cfo",
        ),
        xbrl_tags=(
            "NetCashProvidedByUsedInOperatingActivities",
            "NetCashProvidedByUsedInOperatingActivitiesContinuingOperations",
        ),
        kind="flow",
    ),
    Metric(
        id="capital_expenditures",
        label="Capital expenditures",
        category="cash_flow",
        unit="USD",
        description=(
            "Cash paid for property, plant and equipment in the fiscal year, as a positive amount."
        ),
        formula=None,
        aliases=(
            "capex",
            "capital expenditure",
            "capital spending",
            "purchases of property and equipment",
            "purchases of property plant and equipment",
            "payments for property plant and equipment",
        ),
        # Apple used PaymentsToAcquireProductiveAssets to FY2014, NVIDIA from FY2022
        # (it also covers intangibles, which is why it comes second). NVIDIA's FY2013-FY2021
        # capex sits under a company-specific tag that SEC companyfacts does not carry.
        xbrl_tags=(
            "PaymentsToAcquirePropertyPlantAndEquipment",
            "PaymentsToAcquireProductiveAssets",
        ),
        kind="flow",
    ),
    Metric(
        id="eps_diluted",
        label="Diluted EPS",
        category="income_statement",
        unit="USD/share",
        description=(
            "Diluted earnings per share for the fiscal year, as last reported in a 10-K; "
            "years not re-presented after a stock split keep their pre-split amount."
        ),
        formula=None,
        aliases=(
            "eps",
            "diluted eps",
            "eps diluted",
            "earnings per share",
            "diluted earnings per share",
        ),
        # Tesla FY2012-FY2014 (net losses) tagged one combined basic-and-diluted figure.
        xbrl_tags=("EarningsPerShareDiluted", "EarningsPerShareBasicAndDiluted"),
        kind="flow",
    ),
    Metric(
        id="cash_and_equivalents",
        label="Cash and cash equivalents",
        category="balance_sheet",
        unit="USD",
        description="Cash and cash equivalents at the end of the fiscal year.",
        formula=None,
        aliases=("cash", "cash and equivalents", "cash and cash equivalents", "cash on hand"),
        xbrl_tags=("CashAndCashEquivalentsAtCarryingValue",),
        kind="instant",
    ),
)

METRICS_BY_ID: dict[str, Metric] = {metric.id: metric for metric in CATALOG}

_NON_WORD = re.compile(r"[^a-z0-9 ]+")
_SPACES = re.compile(r"\s+")


def normalize_metric_phrase(text: str) -> str:
    """Lowercase words without punctuation: "R&D" and "r and d" meet, "shareholders'" loses its
    apostrophe, "net_income" becomes "net income"."""
    text = text.lower().replace("’", "").replace("'", "").replace("&", " and ")
    return _SPACES.sub(" ", _NON_WORD.sub(" ", text.replace("_", " "))).strip()


def _phrase_index() -> dict[str, Metric]:
    index: dict[str, Metric] = {}
    for metric in CATALOG:
        for phrase in (metric.id, metric.label, *metric.aliases):
            key = normalize_metric_phrase(phrase)
            holder = index.setdefault(key, metric)
            # One phrase naming two metrics would make routing depend on catalog order.
            if holder is not metric:
                raise ValueError(f"{phrase!r} names both {holder.id} and {metric.id}")
    return index


# Every normalised id, label and alias, and the metric it names.
PHRASE_INDEX: dict[str, Metric] = _phrase_index()


def mid_sentence(label: str) -> str:
    """A label as it reads inside a sentence: "Net income" → "net income", "EPS" stays."""
    if len(label) > 1 and label[0].isupper() and not label[1].isupper():
        return label[0].lower() + label[1:]
    return label


def resolve_metric(phrase: str) -> Metric | None:
    """The metric an id, label or alias names (exact match after normalising), else None."""
    return PHRASE_INDEX.get(normalize_metric_phrase(phrase))
