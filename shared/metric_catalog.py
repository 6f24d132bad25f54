"""The metrics finq knows: ids, labels, the names users type, where XBRL keeps them, and how
the derived ones are computed.

Every stage reads this one table: the router matches the aliases, the tools
label the figures, the ingest picks the XBRL tags and computes the formulas.

Reported metrics have `xbrl_tags`: ordered fallbacks (first tag with a value for
a period wins, see `services.ingest.companyfacts`), chosen by reading which
us-gaap tags the four bundled companies actually file in each year; the
comments beside them say which company uses which tag when, and what is missing.

Derived metrics have a `formula` over other metric ids, evaluated by
`services.ingest.derived` for one company and one period:

- `x` is metric x for the same company and period;
- `x[-n]` is x for the fiscal year n years earlier (so the metric is annual only);
- `avg(x)` is the mean of the opening (a year earlier) and closing balance,
  `(x + x[-1]) / 2`, or the closing balance alone where the opening one is
  missing; the stored provenance spells out which of the two was used;
- `opt(x)` is x, or 0 where the company reports no such line (commercial
  paper, a current portion of debt, inventory): only components a company
  leaves out when it has none are written so;
- a division by zero or by a negative amount gives no value, as does a
  fractional power of a negative number: a P/E on a loss, a growth rate from a
  negative base or a return on negative equity means nothing;
- share counts and per-share amounts are brought to one stock-split basis
  before they are combined (see `services.ingest.derived`).

Units: "USD", "USD/share", "%" (percentage points: 44.13 means 44.13%), "x"
(ratios and multiples), "days", "shares".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

MetricKind = Literal["flow", "instant"]

UNITS: tuple[str, ...] = ("USD", "USD/share", "%", "x", "days", "shares")
CATEGORIES: tuple[str, ...] = (
    "income_statement",
    "balance_sheet",
    "cash_flow",
    "profitability",
    "growth",
    "leverage",
    "liquidity",
    "efficiency",
    "per_share",
    "valuation",
    "capital_returns",
)

# Names a formula may call that are not metric ids (see the module docstring).
FORMULA_FUNCTIONS: frozenset[str] = frozenset({"avg", "opt"})
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")


@dataclass(frozen=True)
class Metric:
    id: str
    label: str
    category: str
    unit: str  # one of UNITS
    description: str
    formula: str | None  # None for a reported metric, else over other metric ids
    aliases: tuple[str, ...]  # lowercase names users type
    xbrl_tags: tuple[str, ...]  # us-gaap tags, most preferred first; empty when derived
    kind: MetricKind  # flow: over a period (income, cash flow); instant: at a date (balance)
    # The metric ids the formula reads, in order of first mention; empty when reported.
    inputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # metrics.json stores lists; a Metric read back must equal the catalog's own.
        for name in ("aliases", "xbrl_tags", "inputs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def derived(self) -> bool:
        """Computed by finq (from other metrics or prices), not read from a filing."""
        return self.formula is not None


def formula_inputs(formula: str) -> tuple[str, ...]:
    """The metric ids a formula names, in order of first mention."""
    names = (name for name in _IDENTIFIER.findall(formula) if name not in FORMULA_FUNCTIONS)
    return tuple(dict.fromkeys(names))


def _reported(
    id: str,
    label: str,
    category: str,
    unit: str,
    kind: MetricKind,
    description: str,
    aliases: tuple[str, ...],
    xbrl_tags: tuple[str, ...],
) -> Metric:
    return Metric(id, label, category, unit, description, None, aliases, xbrl_tags, kind)


def _derived(
    id: str,
    label: str,
    category: str,
    unit: str,
    kind: MetricKind,
    formula: str,
    description: str,
    aliases: tuple[str, ...],
) -> Metric:
    return Metric(
        id, label, category, unit, description, formula, aliases, (), kind, formula_inputs(formula)
    )


def _yoy(
    id: str, base: str, label: str, kind: MetricKind, aliases: tuple[str, ...], what: str
) -> Metric:
    """Year-over-year growth of `base`, in percent."""
    return _derived(
        id,
        label,
        "growth",
        "%",
        kind,
        f"({base} / {base}[-1] - 1) * 100",
        f"Change in {what} from the previous fiscal year, in percent; none where the "
        "previous year's figure is zero or negative (a growth rate from a loss means nothing).",
        aliases,
    )


def _cagr(
    id: str, base: str, years: int, label: str, aliases: tuple[str, ...], what: str
) -> Metric:
    """Compound annual growth of `base` over `years` fiscal years, in percent."""
    return _derived(
        id,
        label,
        "growth",
        "%",
        "flow",
        f"(({base} / {base}[-{years}]) ** (1 / {years}) - 1) * 100",
        f"Compound annual growth rate of {what} over the {years} fiscal years ending with this "
        f"one, in percent; none unless both ends are positive.",
        aliases,
    )


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
            "total sales",
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
            # The parent's share, as a statement with minority interests names this figure.
            "net income attributable to shareholders",
            "net income attributable to stockholders",
            "net income attributable to common stockholders",
            "net income attributable to common shareholders",
            "earnings",
            "profit",
            "net profit",
            "bottom line",
            "bottom line",
            "profit after tax",
            "after tax profit",
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
            "ebit",
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
            # What a company spends on research is this expense: "spent on research".
            "research",
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
            "net worth",
            "net assets",
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
            "cap ex",
            "purchases of pp&e",
            "additions to property and equipment",
            "additions to property plant and equipment",
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
    # --- reported: income statement ---------------------------------------------------
    _reported(
        "cost_of_revenue",
        "Cost of revenue",
        "income_statement",
        "USD",
        "flow",
        "Cost of revenue (cost of sales) for the period.",
        (
            "cost of revenues",
            "cost of sales",
            "cost of goods sold",
            "cost of goods and services sold",
            "cogs",
        ),
        # NVIDIA, Alphabet and Tesla: CostOfRevenue (NVIDIA FY2019 only under the second
        # tag); Apple: CostOfGoodsAndServicesSold in every year; Tesla's CostOfGoodsSold
        # (2009-2017) is the same total and only a last resort.
        ("CostOfRevenue", "CostOfGoodsAndServicesSold", "CostOfGoodsSold"),
    ),
    _reported(
        "selling_general_and_administrative",
        "Selling, general and administrative expense",
        "income_statement",
        "USD",
        "flow",
        "Selling, general and administrative expense for the period. Alphabet reports sales "
        "and marketing and general and administrative separately, with no total.",
        (
            "sg&a",
            "sga",
            "sg&a expense",
            "sg&a expenses",
            "selling general and administrative",
            "selling general and administrative expenses",
            "selling general and administrative costs",
            "sg&a costs",
        ),
        # Apple, NVIDIA and Tesla in every year; Alphabet never (see the two below).
        ("SellingGeneralAndAdministrativeExpense",),
    ),
    _reported(
        "selling_and_marketing",
        "Sales and marketing expense",
        "income_statement",
        "USD",
        "flow",
        "Sales and marketing expense for the period, where it is reported on its own.",
        (
            "selling and marketing",
            "selling and marketing expense",
            "marketing expense",
            "sales and marketing",
            "sales and marketing expense",
            "marketing spend",
            "marketing costs",
        ),
        # Alphabet in every year; Apple from FY2023 (in the notes).
        ("SellingAndMarketingExpense",),
    ),
    _reported(
        "general_and_administrative",
        "General and administrative expense",
        "income_statement",
        "USD",
        "flow",
        "General and administrative expense for the period, where it is reported on its own.",
        (
            "g&a",
            "g&a expense",
            "general and administrative",
            "administrative expenses",
            "general and administrative expenses",
            "g&a costs",
        ),
        # Alphabet in every year; Apple from FY2023.
        ("GeneralAndAdministrativeExpense",),
    ),
    _reported(
        "operating_expenses",
        "Operating expenses",
        "income_statement",
        "USD",
        "flow",
        "Total operating expenses (excluding cost of revenue) for the period.",
        (
            "opex",
            "total operating expenses",
            "op ex",
            "operating costs",
        ),
        # Apple, NVIDIA and Tesla. Alphabet's CostsAndExpenses also holds cost of revenue,
        # a different total, so it is not a fallback: Alphabet has none.
        ("OperatingExpenses",),
    ),
    _reported(
        "interest_expense",
        "Interest expense",
        "income_statement",
        "USD",
        "flow",
        "Interest expense for the period.",
        ("interest costs", "interest cost", "interest charges"),
        # InterestExpense for all four to FY2023; NVIDIA and Alphabet then moved to
        # InterestExpenseNonoperating; Apple stopped reporting it after FY2023.
        ("InterestExpense", "InterestExpenseNonoperating", "InterestExpenseDebt"),
    ),
    _reported(
        "nonoperating_income",
        "Other income (expense), net",
        "income_statement",
        "USD",
        "flow",
        "Total non-operating income less expense for the period (interest, investment gains "
        "and losses, other).",
        (
            "other income",
            "other income expense",
            "other income expense net",
            "nonoperating income",
            "non operating income",
        ),
        # Apple, NVIDIA (from FY2016) and Alphabet. Tesla tags only the "other" part
        # (OtherNonoperatingIncomeExpense), not this total, so it has none.
        ("NonoperatingIncomeExpense",),
    ),
    _reported(
        "pretax_income",
        "Pretax income",
        "income_statement",
        "USD",
        "flow",
        "Income (loss) before income taxes for the period.",
        (
            "pre tax income",
            "income before taxes",
            "income before income taxes",
            "earnings before taxes",
            "profit before tax",
            "ebt",
            "earnings before income taxes",
            "pretax profit",
        ),
        # The first tag from Apple FY2011, NVIDIA FY2020, Alphabet 2017 and Tesla throughout;
        # the second, older name before that.
        (
            "IncomeLossFromContinuingOperationsBeforeIncomeTaxesExtraordinaryItemsNoncontrollingInterest",
            "IncomeLossFromContinuingOperationsBeforeIncomeTaxesMinorityInterestAndIncomeLossFromEquityMethodInvestments",
        ),
    ),
    _reported(
        "income_tax_expense",
        "Income tax expense",
        "income_statement",
        "USD",
        "flow",
        "Provision for (benefit from) income taxes for the period.",
        (
            "income tax",
            "income taxes",
            "tax expense",
            "taxes",
            "provision for income taxes",
            "tax provision",
            "tax bill",
            "tax charge",
            "income tax provision",
            "provision for taxes",
        ),
        ("IncomeTaxExpenseBenefit",),
    ),
    _reported(
        "eps_basic",
        "Basic EPS",
        "income_statement",
        "USD/share",
        "flow",
        "Basic earnings per share for the period, as last reported; years not re-presented "
        "after a stock split keep their pre-split amount.",
        ("basic eps", "eps basic", "basic earnings per share"),
        # Tesla FY2012-FY2014 tagged one combined basic-and-diluted figure.
        ("EarningsPerShareBasic", "EarningsPerShareBasicAndDiluted"),
    ),
    _reported(
        "weighted_average_shares_diluted",
        "Weighted average diluted shares",
        "income_statement",
        "shares",
        "flow",
        "Weighted average diluted shares outstanding over the period, as last reported "
        "(not adjusted for later stock splits).",
        (
            "diluted shares",
            "diluted share count",
            "diluted shares outstanding",
            "weighted average diluted shares outstanding",
        ),
        # Alphabet only from 2022 (before, one figure per share class, which companyfacts
        # does not carry). NVIDIA's FY2008-FY2009 facts are filed in thousands by mistake.
        (
            "WeightedAverageNumberOfDilutedSharesOutstanding",
            "WeightedAverageNumberOfShareOutstandingBasicAndDiluted",
        ),
    ),
    _reported(
        "weighted_average_shares_basic",
        "Weighted average basic shares",
        "income_statement",
        "shares",
        "flow",
        "Weighted average basic shares outstanding over the period, as last reported "
        "(not adjusted for later stock splits).",
        ("basic shares", "basic share count", "weighted average basic shares outstanding"),
        (
            "WeightedAverageNumberOfSharesOutstandingBasic",
            "WeightedAverageNumberOfShareOutstandingBasicAndDiluted",
        ),
    ),
    # --- reported: balance sheet ----------------------------------------------------------
    _reported(
        "marketable_securities_current",
        "Short-term marketable securities",
        "balance_sheet",
        "USD",
        "instant",
        "Current marketable securities (short-term investments) at the end of the period.",
        (
            "short term investments",
            "marketable securities",
            "short term marketable securities",
            "current marketable securities",
        ),
        # MarketableSecuritiesCurrent from Apple FY2018, Alphabet 2017 and NVIDIA throughout;
        # before, Apple and Alphabet tagged available-for-sale securities (Apple FY2009-FY2010
        # the debt-securities variant). Tesla held some only in a few years.
        (
            "MarketableSecuritiesCurrent",
            "AvailableForSaleSecuritiesDebtSecuritiesCurrent",
            "AvailableForSaleSecuritiesCurrent",
        ),
    ),
    _reported(
        "marketable_securities_noncurrent",
        "Long-term marketable securities",
        "balance_sheet",
        "USD",
        "instant",
        "Non-current marketable securities at the end of the period.",
        ("long term marketable securities", "noncurrent marketable securities"),
        # Apple (AvailableForSaleSecuritiesNoncurrent to FY2017); Alphabet 2021-2024 tags a
        # small figure from its notes; NVIDIA and Tesla have none.
        ("MarketableSecuritiesNoncurrent", "AvailableForSaleSecuritiesNoncurrent"),
    ),
    _reported(
        "accounts_receivable",
        "Accounts receivable",
        "balance_sheet",
        "USD",
        "instant",
        "Accounts receivable, net, at the end of the period.",
        ("receivables", "trade receivables", "accounts receivable net"),
        ("AccountsReceivableNetCurrent",),
    ),
    _reported(
        "inventory",
        "Inventory",
        "balance_sheet",
        "USD",
        "instant",
        "Inventories at the end of the period.",
        ("inventories",),
        # Alphabet shows no inventory line after 2022.
        ("InventoryNet",),
    ),
    _reported(
        "current_assets",
        "Current assets",
        "balance_sheet",
        "USD",
        "instant",
        "Total current assets at the end of the period.",
        ("total current assets",),
        ("AssetsCurrent",),
    ),
    _reported(
        "property_plant_and_equipment",
        "Property, plant and equipment, net",
        "balance_sheet",
        "USD",
        "instant",
        "Property, plant and equipment net of depreciation at the end of the period.",
        (
            "pp&e",
            "net pp&e",
            "ppe",
            "property plant and equipment",
            "property and equipment",
            "fixed assets",
        ),
        ("PropertyPlantAndEquipmentNet",),
    ),
    _reported(
        "goodwill",
        "Goodwill",
        "balance_sheet",
        "USD",
        "instant",
        "Goodwill at the end of the period. Apple stopped showing it on its own after FY2017.",
        (),
        ("Goodwill",),
    ),
    _reported(
        "intangible_assets",
        "Intangible assets",
        "balance_sheet",
        "USD",
        "instant",
        "Intangible assets other than goodwill, net, at the end of the period.",
        ("intangibles", "acquired intangible assets", "intangible assets net"),
        # The finite-lived total is the fallback: these companies hold few indefinite-lived.
        ("IntangibleAssetsNetExcludingGoodwill", "FiniteLivedIntangibleAssetsNet"),
    ),
    _reported(
        "other_noncurrent_assets",
        "Other non-current assets",
        "balance_sheet",
        "USD",
        "instant",
        "Other non-current assets at the end of the period.",
        ("other long term assets", "other noncurrent assets"),
        ("OtherAssetsNoncurrent",),
    ),
    _reported(
        "accounts_payable",
        "Accounts payable",
        "balance_sheet",
        "USD",
        "instant",
        "Accounts payable at the end of the period.",
        ("payables", "trade payables"),
        ("AccountsPayableCurrent",),
    ),
    _reported(
        "accrued_liabilities",
        "Accrued liabilities",
        "balance_sheet",
        "USD",
        "instant",
        "Accrued (current) liabilities at the end of the period.",
        ("accrued expenses", "accrued liabilities current"),
        # Apple to FY2017 and Tesla to 2017 only; they fold it into other lines since.
        ("AccruedLiabilitiesCurrent",),
    ),
    _reported(
        "deferred_revenue",
        "Deferred revenue",
        "balance_sheet",
        "USD",
        "instant",
        "Current deferred revenue (contract liabilities) at the end of the period.",
        ("unearned revenue", "contract liabilities", "deferred revenues"),
        # The ASC 606 name from 2017-2018 on, the older one before.
        ("ContractWithCustomerLiabilityCurrent", "DeferredRevenueCurrent"),
    ),
    _reported(
        "commercial_paper",
        "Commercial paper",
        "balance_sheet",
        "USD",
        "instant",
        "Commercial paper outstanding at the end of the period.",
        ("commercial paper outstanding",),
        # Apple, Alphabet and NVIDIA (zero); Tesla has none.
        ("CommercialPaper",),
    ),
    _reported(
        "current_debt",
        "Current portion of debt",
        "balance_sheet",
        "USD",
        "instant",
        "Term debt (and, where tagged together, finance leases) due within a year, at the end "
        "of the period; commercial paper is separate.",
        (
            "current portion of debt",
            "current portion of long term debt",
            "current maturities of long term debt",
            "current portion of term debt",
            "current maturities of debt",
            "debt due within one year",
        ),
        # Apple and Alphabet (2019 on) and NVIDIA: LongTermDebtCurrent; Alphabet 2014-2015
        # and Tesla 2014-2018 tagged debt and capital leases together; Tesla 2019-2021 only
        # DebtCurrent (which for Alphabet 2014-2015 would include commercial paper, hence last).
        ("LongTermDebtCurrent", "LongTermDebtAndCapitalLeaseObligationsCurrent", "DebtCurrent"),
    ),
    _reported(
        "current_liabilities",
        "Current liabilities",
        "balance_sheet",
        "USD",
        "instant",
        "Total current liabilities at the end of the period.",
        ("total current liabilities",),
        ("LiabilitiesCurrent",),
    ),
    _reported(
        "long_term_debt",
        "Long-term debt",
        "balance_sheet",
        "USD",
        "instant",
        "Debt due after more than a year (non-current portion) at the end of the period.",
        (
            "long term debt noncurrent",
            "noncurrent debt",
            "term debt",
            "long term borrowings",
            "non current borrowings",
        ),
        # Apple from FY2014, NVIDIA from FY2020, Alphabet, Tesla to 2013: the non-current tag;
        # Alphabet 2020-2022 and Tesla 2014-2018 tag debt and finance leases together.
        # LongTermDebt is not a fallback: it includes the current portion. So NVIDIA before
        # FY2020 and Tesla from 2019 have none.
        ("LongTermDebtNoncurrent", "LongTermDebtAndCapitalLeaseObligations"),
    ),
    _reported(
        "other_noncurrent_liabilities",
        "Other non-current liabilities",
        "balance_sheet",
        "USD",
        "instant",
        "Other non-current liabilities at the end of the period.",
        ("other long term liabilities", "other noncurrent liabilities"),
        ("OtherLiabilitiesNoncurrent",),
    ),
    _reported(
        "retained_earnings",
        "Retained earnings",
        "balance_sheet",
        "USD",
        "instant",
        "Retained earnings (accumulated deficit) at the end of the period.",
        ("accumulated deficit", "retained earnings accumulated deficit"),
        ("RetainedEarningsAccumulatedDeficit",),
    ),
    _reported(
        "accumulated_other_comprehensive_income",
        "Accumulated other comprehensive income",
        "balance_sheet",
        "USD",
        "instant",
        "Accumulated other comprehensive income (loss) at the end of the period.",
        ("aoci", "accumulated other comprehensive loss"),
        ("AccumulatedOtherComprehensiveIncomeLossNetOfTax",),
    ),
    _reported(
        "total_liabilities_and_equity",
        "Total liabilities and stockholders' equity",
        "balance_sheet",
        "USD",
        "instant",
        "Total liabilities and stockholders' equity (equal to total assets) at the end of the "
        "period.",
        ("total liabilities and equity", "total liabilities and shareholders equity"),
        ("LiabilitiesAndStockholdersEquity",),
    ),
    _reported(
        "shares_outstanding",
        "Shares outstanding",
        "balance_sheet",
        "shares",
        "instant",
        "Common shares outstanding at the end of the period, as last reported (not adjusted "
        "for later stock splits; the derived per-share and valuation metrics are).",
        (
            "common shares outstanding",
            "outstanding shares",
            "share count",
            "number of shares",
            "number of shares outstanding",
        ),
        # The balance sheet's count at the period end, which all four tag (Alphabet from
        # 2014, all classes together). dei:EntityCommonStockSharesOutstanding is not used:
        # it is dated on the cover page (weeks after the period end), and Alphabet files
        # none. Tesla's FY2021 10-K dated its count 2021-12-30, a day off its year end.
        ("CommonStockSharesOutstanding",),
    ),
    _reported(
        "cash_and_restricted_cash",
        "Cash, cash equivalents and restricted cash",
        "balance_sheet",
        "USD",
        "instant",
        "Cash, cash equivalents and restricted cash (the cash flow statement's ending "
        "balance) at the end of the period.",
        ("cash and restricted cash", "cash including restricted cash"),
        # From 2016-2017 (ASU 2016-18); Tesla does not tag it.
        ("CashCashEquivalentsRestrictedCashAndRestrictedCashEquivalents",),
    ),
    # --- reported: cash flow --------------------------------------------------------------
    _reported(
        "investing_cash_flow",
        "Investing cash flow",
        "cash_flow",
        "USD",
        "flow",
        "Net cash provided by (used in) investing activities for the period.",
        (
            "investing cash flows",
            "cash from investing",
            "cash from investing activities",
            "cash flow from investing activities",
            "net cash used in investing activities",
            "cfi",
            "cash flow from investing",
            "cash used in investing activities",
        ),
        # Apple FY2014 and Tesla 2014-2015 used the continuing-operations name.
        (
            "NetCashProvidedByUsedInInvestingActivities",
            "NetCashProvidedByUsedInInvestingActivitiesContinuingOperations",
        ),
    ),
    _reported(
        "financing_cash_flow",
        "Financing cash flow",
        "cash_flow",
        "USD",
        "flow",
        "Net cash provided by (used in) financing activities for the period.",
        (
            "financing cash flows",
            "cash from financing",
            "cash from financing activities",
            "cash flow from financing activities",
            "net cash used in financing activities",
            "cff",
            "cash flow from financing",
            "cash used in financing activities",
        ),
        (
            "NetCashProvidedByUsedInFinancingActivities",
            "NetCashProvidedByUsedInFinancingActivitiesContinuingOperations",
        ),
    ),
    _reported(
        "depreciation_and_amortization",
        "Depreciation and amortization",
        "cash_flow",
        "USD",
        "flow",
        "Depreciation and amortization (the cash flow statement's add-back) for the period.",
        ("d&a", "depreciation amortization", "depreciation and amortisation"),
        # Apple FY2015 on and NVIDIA FY2020 on: the first tag; Apple before: the second;
        # NVIDIA before and Tesla to 2017: the third. Not "Depreciation" alone, which
        # leaves out amortization (Tesla's 2018+ figure under it is far below its total):
        # so Alphabet and Tesla from 2018 have none.
        (
            "DepreciationDepletionAndAmortization",
            "DepreciationAmortizationAndAccretionNet",
            "DepreciationAndAmortization",
        ),
    ),
    _reported(
        "stock_based_compensation",
        "Stock-based compensation",
        "cash_flow",
        "USD",
        "flow",
        "Share-based compensation expense (the cash flow statement's add-back) for the period.",
        (
            "stock comp",
            "stock compensation",
            "share based compensation",
            "stock based compensation expense",
            "sbc",
            "equity compensation",
            "equity based compensation",
        ),
        ("ShareBasedCompensation", "AllocatedShareBasedCompensationExpense"),
    ),
    _reported(
        "income_taxes_paid",
        "Income taxes paid",
        "cash_flow",
        "USD",
        "flow",
        "Cash paid for income taxes, net of refunds, for the period.",
        (
            "cash taxes",
            "cash taxes paid",
            "taxes paid",
            "cash paid for income taxes",
            "cash paid for taxes",
        ),
        # Tesla and Alphabet's 2013 figure use the older name.
        ("IncomeTaxesPaidNet", "IncomeTaxesPaid"),
    ),
    _reported(
        "interest_paid",
        "Interest paid",
        "cash_flow",
        "USD",
        "flow",
        "Cash paid for interest for the period.",
        (
            "cash interest paid",
            "cash paid for interest",
            "cash interest",
        ),
        ("InterestPaidNet", "InterestPaid"),
    ),
    # --- reported: capital returns --------------------------------------------------------
    _reported(
        "dividends_paid",
        "Dividends paid",
        "capital_returns",
        "USD",
        "flow",
        "Cash dividends paid to shareholders in the period, as a positive amount.",
        (
            "dividends",
            "cash dividends",
            "cash dividends paid",
            "dividend payments",
            "dividends paid to shareholders",
            "dividends to shareholders",
        ),
        # Apple FY2016-FY2017 also tagged the common-stock variant; Tesla pays none.
        ("PaymentsOfDividends", "PaymentsOfDividendsCommonStock"),
    ),
    _reported(
        "share_repurchases",
        "Share repurchases",
        "capital_returns",
        "USD",
        "flow",
        "Cash paid to repurchase common stock in the period, as a positive amount.",
        (
            "buybacks",
            "buyback",
            "share buybacks",
            "stock buybacks",
            "repurchases",
            "stock repurchases",
            "repurchases of common stock",
        ),
        # Tesla has repurchased none.
        ("PaymentsForRepurchaseOfCommonStock",),
    ),
    _reported(
        "dividends_per_share",
        "Dividends per share",
        "capital_returns",
        "USD/share",
        "flow",
        "Dividends per common share for the period (paid, else declared), as last reported; "
        "years not re-presented after a stock split keep their pre-split amount.",
        ("dps", "dividend per share", "dividends declared per share"),
        # NVIDIA tags both and its FY2016 "declared" fact is one quarter's (0.115 for 0.395
        # paid), so paid comes first; Apple and Alphabet (2024 on) tag declared only.
        ("CommonStockDividendsPerShareCashPaid", "CommonStockDividendsPerShareDeclared"),
    ),
    # --- derived: statements --------------------------------------------------------------
    _derived(
        "ebitda",
        "EBITDA",
        "income_statement",
        "USD",
        "flow",
        "operating_income + depreciation_and_amortization",
        "Operating income plus depreciation and amortization for the period; none where "
        "depreciation and amortization is not reported as one figure.",
        ("earnings before interest taxes depreciation and amortization",),
    ),
    _derived(
        "free_cash_flow",
        "Free cash flow",
        "cash_flow",
        "USD",
        "flow",
        "operating_cash_flow - capital_expenditures",
        "Operating cash flow minus capital expenditures for the period.",
        ("fcf", "free cashflow", "free cash flows"),
    ),
    _derived(
        "total_debt",
        "Total debt",
        "balance_sheet",
        "USD",
        "instant",
        "long_term_debt + opt(current_debt) + opt(commercial_paper)",
        "Long-term debt plus its current portion plus commercial paper at the end of the "
        "period (finance leases where the company tags them with its debt); the short-term "
        "parts count as zero where the company reports no such line.",
        ("debt", "gross debt", "borrowings", "total borrowings"),
    ),
    _derived(
        "short_term_debt",
        "Short-term debt",
        "balance_sheet",
        "USD",
        "instant",
        "current_debt + opt(commercial_paper)",
        "Debt due within a year (current portion of term debt plus commercial paper) at the "
        "end of the period.",
        ("short term borrowings",),
    ),
    _derived(
        "tangible_book_value",
        "Tangible book value",
        "balance_sheet",
        "USD",
        "instant",
        "stockholders_equity - goodwill - intangible_assets",
        "Stockholders' equity minus goodwill and intangible assets at the end of the period; "
        "only where both are reported.",
        (
            "tangible equity",
            "tangible net worth",
            "tangible book",
        ),
    ),
    _derived(
        "invested_capital",
        "Invested capital",
        "balance_sheet",
        "USD",
        "instant",
        "total_debt + stockholders_equity",
        "Total debt plus stockholders' equity at the end of the period.",
        (
            "total capital",
            "capital invested",
        ),
    ),
    _derived(
        "capital_employed",
        "Capital employed",
        "balance_sheet",
        "USD",
        "instant",
        "total_assets - current_liabilities",
        "Total assets minus current liabilities at the end of the period.",
        (),
    ),
    # --- derived: profitability -----------------------------------------------------------
    _derived(
        "gross_margin",
        "Gross margin",
        "profitability",
        "%",
        "flow",
        "gross_profit / revenue * 100",
        "Gross profit as a percentage of revenue for the period.",
        (
            "gross profit margin",
            "gross margin percentage",
            "gross margin %",
            "gm %",
        ),
    ),
    _derived(
        "operating_margin",
        "Operating margin",
        "profitability",
        "%",
        "flow",
        "operating_income / revenue * 100",
        "Operating income as a percentage of revenue for the period.",
        ("operating profit margin", "operating income margin", "ebit margin"),
    ),
    _derived(
        "net_margin",
        "Net margin",
        "profitability",
        "%",
        "flow",
        "net_income / revenue * 100",
        "Net income as a percentage of revenue for the period.",
        ("net profit margin", "profit margin", "net income margin"),
    ),
    _derived(
        "ebitda_margin",
        "EBITDA margin",
        "profitability",
        "%",
        "flow",
        "ebitda / revenue * 100",
        "EBITDA as a percentage of revenue for the period.",
        (),
    ),
    _derived(
        "pretax_margin",
        "Pretax margin",
        "profitability",
        "%",
        "flow",
        "pretax_income / revenue * 100",
        "Income before income taxes as a percentage of revenue for the period.",
        ("pre tax margin", "pretax profit margin", "ebt margin"),
    ),
    _derived(
        "free_cash_flow_margin",
        "Free cash flow margin",
        "profitability",
        "%",
        "flow",
        "free_cash_flow / revenue * 100",
        "Free cash flow as a percentage of revenue for the period.",
        ("fcf margin",),
    ),
    _derived(
        "operating_cash_flow_margin",
        "Operating cash flow margin",
        "profitability",
        "%",
        "flow",
        "operating_cash_flow / revenue * 100",
        "Operating cash flow as a percentage of revenue for the period.",
        ("cash flow margin", "ocf margin"),
    ),
    _derived(
        "effective_tax_rate",
        "Effective tax rate",
        "profitability",
        "%",
        "flow",
        "income_tax_expense / pretax_income * 100",
        "Income tax expense as a percentage of pretax income for the period; none for a "
        "pretax loss.",
        ("tax rate", "etr", "effective income tax rate"),
    ),
    _derived(
        "return_on_equity",
        "Return on equity",
        "profitability",
        "%",
        "flow",
        "net_income / avg(stockholders_equity) * 100",
        "Net income as a percentage of average stockholders' equity (opening and closing; the "
        "closing balance alone where the opening one is missing); annual and trailing twelve "
        "months; none where equity is zero or negative.",
        ("roe", "return on shareholders equity", "return on stockholders equity"),
    ),
    _derived(
        "return_on_assets",
        "Return on assets",
        "profitability",
        "%",
        "flow",
        "net_income / avg(total_assets) * 100",
        "Net income as a percentage of average total assets (opening and closing; the closing "
        "balance alone where the opening one is missing); annual and trailing twelve months.",
        ("roa", "return on total assets"),
    ),
    _derived(
        "nopat",
        "NOPAT",
        "profitability",
        "USD",
        "flow",
        "operating_income * (1 - income_tax_expense / pretax_income)",
        "Net operating profit after tax: operating income times one minus the effective tax "
        "rate; none for a pretax loss.",
        (
            "net operating profit after tax",
            "net operating profit after taxes",
            "operating profit after tax",
        ),
    ),
    _derived(
        "return_on_invested_capital",
        "Return on invested capital",
        "profitability",
        "%",
        "flow",
        "nopat / avg(invested_capital) * 100",
        "NOPAT as a percentage of average invested capital (total debt plus equity, opening "
        "and closing; the closing one alone where the opening one is missing); annual and "
        "trailing twelve months.",
        ("roic", "return on capital"),
    ),
    _derived(
        "return_on_capital_employed",
        "Return on capital employed",
        "profitability",
        "%",
        "flow",
        "operating_income / avg(capital_employed) * 100",
        "Operating income as a percentage of average capital employed (total assets minus "
        "current liabilities, opening and closing; the closing one alone where the opening "
        "one is missing); annual and trailing twelve months.",
        ("roce",),
    ),
    _derived(
        "research_and_development_to_revenue",
        "R&D to revenue",
        "profitability",
        "%",
        "flow",
        "research_and_development / revenue * 100",
        "Research and development expense as a percentage of revenue for the period.",
        ("r&d intensity", "r&d to sales", "r&d as a percentage of revenue", "r&d ratio"),
    ),
    _derived(
        "sga_to_revenue",
        "SG&A to revenue",
        "profitability",
        "%",
        "flow",
        "selling_general_and_administrative / revenue * 100",
        "Selling, general and administrative expense as a percentage of revenue.",
        ("sg&a ratio", "sg&a as a percentage of revenue", "sg&a to sales"),
    ),
    _derived(
        "operating_expense_ratio",
        "Operating expense ratio",
        "profitability",
        "%",
        "flow",
        "operating_expenses / revenue * 100",
        "Operating expenses (excluding cost of revenue) as a percentage of revenue.",
        ("opex ratio", "opex to revenue", "operating expenses to revenue"),
    ),
    _derived(
        "stock_based_compensation_to_revenue",
        "Stock-based compensation to revenue",
        "profitability",
        "%",
        "flow",
        "stock_based_compensation / revenue * 100",
        "Stock-based compensation as a percentage of revenue for the period.",
        ("sbc to revenue", "stock comp to revenue"),
    ),
    _derived(
        "free_cash_flow_conversion",
        "Free cash flow conversion",
        "profitability",
        "%",
        "flow",
        "free_cash_flow / net_income * 100",
        "Free cash flow as a percentage of net income; none for a net loss.",
        ("fcf conversion", "cash conversion rate"),
    ),
    # --- derived: growth (annual only) ---------------------------------------------------
    _yoy(
        "revenue_growth",
        "revenue",
        "Revenue growth",
        "flow",
        (
            "revenue growth rate",
            "yoy revenue growth",
            "sales growth",
            "top line growth",
            "revenue growth yoy",
        ),
        "revenue",
    ),
    _yoy(
        "gross_profit_growth",
        "gross_profit",
        "Gross profit growth",
        "flow",
        ("yoy gross profit growth",),
        "gross profit",
    ),
    _yoy(
        "operating_income_growth",
        "operating_income",
        "Operating income growth",
        "flow",
        ("operating profit growth", "ebit growth", "yoy operating income growth"),
        "operating income",
    ),
    _yoy(
        "net_income_growth",
        "net_income",
        "Net income growth",
        "flow",
        ("earnings growth", "profit growth", "net profit growth", "yoy net income growth"),
        "net income",
    ),
    _yoy(
        "eps_growth",
        "eps_diluted",
        "EPS growth",
        "flow",
        ("diluted eps growth", "earnings per share growth", "yoy eps growth"),
        "diluted EPS (both years on one stock-split basis)",
    ),
    _yoy(
        "free_cash_flow_growth",
        "free_cash_flow",
        "Free cash flow growth",
        "flow",
        ("fcf growth", "yoy fcf growth"),
        "free cash flow",
    ),
    _yoy("ebitda_growth", "ebitda", "EBITDA growth", "flow", ("yoy ebitda growth",), "EBITDA"),
    _yoy(
        "operating_cash_flow_growth",
        "operating_cash_flow",
        "Operating cash flow growth",
        "flow",
        ("cash flow growth", "ocf growth"),
        "operating cash flow",
    ),
    _yoy(
        "research_and_development_growth",
        "research_and_development",
        "R&D growth",
        "flow",
        ("r&d expense growth", "research and development growth"),
        "research and development expense",
    ),
    _yoy(
        "capital_expenditures_growth",
        "capital_expenditures",
        "Capex growth",
        "flow",
        ("capital expenditure growth", "capital expenditures growth"),
        "capital expenditures",
    ),
    _yoy(
        "dividends_per_share_growth",
        "dividends_per_share",
        "Dividend per share growth",
        "flow",
        ("dividend growth", "dps growth", "dividends per share growth"),
        "dividends per share (both years on one stock-split basis)",
    ),
    _yoy(
        "total_assets_growth",
        "total_assets",
        "Total assets growth",
        "instant",
        ("asset growth", "assets growth"),
        "total assets",
    ),
    _yoy(
        "stockholders_equity_growth",
        "stockholders_equity",
        "Stockholders' equity growth",
        "instant",
        ("book value growth", "equity growth", "shareholders equity growth"),
        "stockholders' equity",
    ),
    _yoy(
        "shares_outstanding_change",
        "shares_outstanding",
        "Change in shares outstanding",
        "instant",
        ("share count change", "share count growth", "change in share count", "net dilution"),
        "shares outstanding (both years on one stock-split basis; negative when buybacks "
        "shrink the count)",
    ),
    _cagr(
        "revenue_cagr_3y",
        "revenue",
        3,
        "Revenue CAGR (three years)",
        ("3 year revenue cagr", "3y revenue cagr", "three year revenue cagr", "revenue cagr 3y"),
        "revenue",
    ),
    _cagr(
        "revenue_cagr_5y",
        "revenue",
        5,
        "Revenue CAGR (five years)",
        ("5 year revenue cagr", "5y revenue cagr", "five year revenue cagr", "revenue cagr 5y"),
        "revenue",
    ),
    _cagr(
        "eps_cagr_3y",
        "eps_diluted",
        3,
        "EPS CAGR (three years)",
        ("3 year eps cagr", "3y eps cagr", "three year eps cagr", "eps cagr 3y"),
        "diluted EPS (on one stock-split basis)",
    ),
    _cagr(
        "eps_cagr_5y",
        "eps_diluted",
        5,
        "EPS CAGR (five years)",
        ("5 year eps cagr", "5y eps cagr", "five year eps cagr", "eps cagr 5y"),
        "diluted EPS (on one stock-split basis)",
    ),
    _cagr(
        "net_income_cagr_3y",
        "net_income",
        3,
        "Net income CAGR (three years)",
        ("3 year net income cagr", "3y net income cagr", "net income cagr 3y"),
        "net income",
    ),
    _cagr(
        "net_income_cagr_5y",
        "net_income",
        5,
        "Net income CAGR (five years)",
        ("5 year net income cagr", "5y net income cagr", "net income cagr 5y"),
        "net income",
    ),
    _cagr(
        "free_cash_flow_cagr_3y",
        "free_cash_flow",
        3,
        "Free cash flow CAGR (three years)",
        ("3 year fcf cagr", "3y fcf cagr", "fcf cagr 3y", "3 year free cash flow cagr"),
        "free cash flow",
    ),
    _cagr(
        "free_cash_flow_cagr_5y",
        "free_cash_flow",
        5,
        "Free cash flow CAGR (five years)",
        ("5 year fcf cagr", "5y fcf cagr", "fcf cagr 5y", "5 year free cash flow cagr"),
        "free cash flow",
    ),
    _cagr(
        "operating_income_cagr_3y",
        "operating_income",
        3,
        "Operating income CAGR (three years)",
        ("3 year operating income cagr", "3y operating income cagr", "operating income cagr 3y"),
        "operating income",
    ),
    _cagr(
        "operating_income_cagr_5y",
        "operating_income",
        5,
        "Operating income CAGR (five years)",
        ("5 year operating income cagr", "5y operating income cagr", "operating income cagr 5y"),
        "operating income",
    ),
    _cagr(
        "ebitda_cagr_3y",
        "ebitda",
        3,
        "EBITDA CAGR (three years)",
        ("3 year ebitda cagr", "3y ebitda cagr", "ebitda cagr 3y"),
        "EBITDA",
    ),
    _cagr(
        "ebitda_cagr_5y",
        "ebitda",
        5,
        "EBITDA CAGR (five years)",
        ("5 year ebitda cagr", "5y ebitda cagr", "ebitda cagr 5y"),
        "EBITDA",
    ),
    # --- derived: leverage ----------------------------------------------------------------
    _derived(
        "net_debt",
        "Net debt",
        "leverage",
        "USD",
        "instant",
        "total_debt - cash_and_equivalents",
        "Total debt minus cash and cash equivalents at the end of the period; negative when "
        "cash exceeds debt.",
        (),
    ),
    _derived(
        "debt_to_equity",
        "Debt to equity",
        "leverage",
        "x",
        "instant",
        "total_debt / stockholders_equity",
        "Total debt divided by stockholders' equity; none where equity is zero or negative.",
        (
            "debt to equity ratio",
            "debt/equity",
            "debt/equity ratio",
            "d/e ratio",
            "debt equity ratio",
        ),
    ),
    _derived(
        "debt_to_assets",
        "Debt to assets",
        "leverage",
        "x",
        "instant",
        "total_debt / total_assets",
        "Total debt divided by total assets.",
        ("debt to assets ratio", "debt/assets", "debt ratio"),
    ),
    _derived(
        "debt_to_capital",
        "Debt to capital",
        "leverage",
        "x",
        "instant",
        "total_debt / invested_capital",
        "Total debt divided by total debt plus stockholders' equity.",
        ("debt to capital ratio", "debt to capitalization", "debt/capital"),
    ),
    _derived(
        "long_term_debt_to_equity",
        "Long-term debt to equity",
        "leverage",
        "x",
        "instant",
        "long_term_debt / stockholders_equity",
        "Long-term debt (non-current) divided by stockholders' equity; none where equity is "
        "zero or negative.",
        ("long term debt to equity ratio",),
    ),
    _derived(
        "liabilities_to_equity",
        "Liabilities to equity",
        "leverage",
        "x",
        "instant",
        "total_liabilities / stockholders_equity",
        "Total liabilities divided by stockholders' equity; none where equity is zero or negative.",
        ("total liabilities to equity", "liabilities to equity ratio"),
    ),
    _derived(
        "equity_multiplier",
        "Equity multiplier",
        "leverage",
        "x",
        "instant",
        "total_assets / stockholders_equity",
        "Total assets divided by stockholders' equity; none where equity is zero or negative.",
        ("financial leverage ratio", "assets to equity"),
    ),
    _derived(
        "equity_ratio",
        "Equity ratio",
        "leverage",
        "%",
        "instant",
        "stockholders_equity / total_assets * 100",
        "Stockholders' equity as a percentage of total assets.",
        ("equity to assets",),
    ),
    _derived(
        "interest_coverage",
        "Interest coverage",
        "leverage",
        "x",
        "flow",
        "operating_income / interest_expense",
        "Operating income divided by interest expense for the period; none where interest "
        "expense is zero.",
        ("interest coverage ratio", "times interest earned", "tie ratio"),
    ),
    _derived(
        "debt_to_ebitda",
        "Debt to EBITDA",
        "leverage",
        "x",
        "flow",
        "total_debt / ebitda",
        "Total debt at the period end divided by the period's EBITDA; annual and trailing "
        "twelve months; none where EBITDA is zero or negative.",
        ("debt/ebitda", "leverage ratio"),
    ),
    _derived(
        "net_debt_to_ebitda",
        "Net debt to EBITDA",
        "leverage",
        "x",
        "flow",
        "net_debt / ebitda",
        "Net debt at the period end divided by the period's EBITDA (negative with net cash); "
        "annual and trailing twelve months; none where EBITDA is zero or negative.",
        ("net debt/ebitda", "net leverage"),
    ),
    _derived(
        "cash_to_debt",
        "Cash to debt",
        "leverage",
        "x",
        "instant",
        "cash_and_equivalents / total_debt",
        "Cash and cash equivalents divided by total debt; none without debt.",
        ("cash to debt ratio",),
    ),
    # --- derived: liquidity ---------------------------------------------------------------
    _derived(
        "current_ratio",
        "Current ratio",
        "liquidity",
        "x",
        "instant",
        "current_assets / current_liabilities",
        "Current assets divided by current liabilities.",
        ("working capital ratio",),
    ),
    _derived(
        "quick_ratio",
        "Quick ratio",
        "liquidity",
        "x",
        "instant",
        "(current_assets - opt(inventory)) / current_liabilities",
        "Current assets less inventory, divided by current liabilities (inventory counts as "
        "zero where the balance sheet shows none).",
        ("acid test ratio", "acid test"),
    ),
    _derived(
        "cash_and_short_term_investments",
        "Cash and short-term investments",
        "liquidity",
        "USD",
        "instant",
        "cash_and_equivalents + opt(marketable_securities_current)",
        "Cash and cash equivalents plus current marketable securities at the end of the period.",
        (
            "cash and marketable securities",
            "cash and short term marketable securities",
            "cash and investments",
        ),
    ),
    _derived(
        "cash_ratio",
        "Cash ratio",
        "liquidity",
        "x",
        "instant",
        "cash_and_short_term_investments / current_liabilities",
        "Cash, cash equivalents and current marketable securities divided by current liabilities.",
        (),
    ),
    _derived(
        "working_capital",
        "Working capital",
        "liquidity",
        "USD",
        "instant",
        "current_assets - current_liabilities",
        "Current assets minus current liabilities at the end of the period.",
        ("net working capital",),
    ),
    _derived(
        "net_cash",
        "Net cash",
        "liquidity",
        "USD",
        "instant",
        "cash_and_short_term_investments - total_debt",
        "Cash, cash equivalents and current marketable securities minus total debt at the end "
        "of the period; negative when debt exceeds them.",
        ("net cash position",),
    ),
    _derived(
        "operating_cash_flow_ratio",
        "Operating cash flow ratio",
        "liquidity",
        "x",
        "flow",
        "operating_cash_flow / current_liabilities",
        "Operating cash flow for the period divided by current liabilities at its end; annual "
        "and trailing twelve months.",
        ("cash flow ratio", "ocf ratio"),
    ),
    # --- derived: efficiency --------------------------------------------------------------
    _derived(
        "asset_turnover",
        "Asset turnover",
        "efficiency",
        "x",
        "flow",
        "revenue / avg(total_assets)",
        "Revenue divided by average total assets (opening and closing; the closing balance "
        "alone where the opening one is missing); annual and trailing twelve months.",
        (
            "total asset turnover",
            "asset turnover ratio",
            "asset turns",
        ),
    ),
    _derived(
        "fixed_asset_turnover",
        "Fixed asset turnover",
        "efficiency",
        "x",
        "flow",
        "revenue / avg(property_plant_and_equipment)",
        "Revenue divided by average net property, plant and equipment (opening and closing; "
        "the closing balance alone where the opening one is missing).",
        ("fixed asset turnover ratio", "pp&e turnover"),
    ),
    _derived(
        "inventory_turnover",
        "Inventory turnover",
        "efficiency",
        "x",
        "flow",
        "cost_of_revenue / avg(inventory)",
        "Cost of revenue divided by average inventory (opening and closing; the closing "
        "balance alone where the opening one is missing).",
        ("inventory turns", "inventory turnover ratio"),
    ),
    _derived(
        "receivables_turnover",
        "Receivables turnover",
        "efficiency",
        "x",
        "flow",
        "revenue / avg(accounts_receivable)",
        "Revenue divided by average accounts receivable (opening and closing; the closing "
        "balance alone where the opening one is missing).",
        ("accounts receivable turnover", "receivables turnover ratio"),
    ),
    _derived(
        "payables_turnover",
        "Payables turnover",
        "efficiency",
        "x",
        "flow",
        "cost_of_revenue / avg(accounts_payable)",
        "Cost of revenue divided by average accounts payable (opening and closing; the closing "
        "balance alone where the opening one is missing).",
        ("accounts payable turnover", "payables turnover ratio"),
    ),
    _derived(
        "days_sales_outstanding",
        "Days sales outstanding",
        "efficiency",
        "days",
        "flow",
        "avg(accounts_receivable) / revenue * 365",
        "Average accounts receivable over the year's revenue, in days (365 a year); annual and "
        "trailing twelve months.",
        ("dso", "receivable days", "days receivables", "days sales in receivables"),
    ),
    _derived(
        "days_inventory_outstanding",
        "Days inventory outstanding",
        "efficiency",
        "days",
        "flow",
        "avg(inventory) / cost_of_revenue * 365",
        "Average inventory over the year's cost of revenue, in days (365 a year); annual and "
        "trailing twelve months.",
        ("dio", "inventory days", "days in inventory", "days inventory"),
    ),
    _derived(
        "days_payables_outstanding",
        "Days payables outstanding",
        "efficiency",
        "days",
        "flow",
        "avg(accounts_payable) / cost_of_revenue * 365",
        "Average accounts payable over the year's cost of revenue, in days (365 a year); annual "
        "and trailing twelve months.",
        ("dpo", "payable days", "days payable outstanding", "days payables"),
    ),
    _derived(
        "cash_conversion_cycle",
        "Cash conversion cycle",
        "efficiency",
        "days",
        "flow",
        "days_sales_outstanding + days_inventory_outstanding - days_payables_outstanding",
        "Days sales outstanding plus days inventory outstanding minus days payables "
        "outstanding; negative when suppliers are paid after customers pay.",
        ("ccc", "cash cycle", "cash conversion cycle days"),
    ),
    _derived(
        "working_capital_turnover",
        "Working capital turnover",
        "efficiency",
        "x",
        "flow",
        "revenue / working_capital",
        "Revenue divided by working capital at the period end; none where working capital "
        "is zero or negative.",
        ("working capital turnover ratio",),
    ),
    _derived(
        "capex_to_revenue",
        "Capex to revenue",
        "efficiency",
        "%",
        "flow",
        "capital_expenditures / revenue * 100",
        "Capital expenditures as a percentage of revenue for the period.",
        ("capex intensity", "capital intensity", "capex as a percentage of revenue"),
    ),
    _derived(
        "capex_to_depreciation",
        "Capex to depreciation",
        "efficiency",
        "x",
        "flow",
        "capital_expenditures / depreciation_and_amortization",
        "Capital expenditures divided by depreciation and amortization for the period.",
        ("capex to d&a", "capex to depreciation ratio"),
    ),
    # --- derived: per share (on the latest stock-split basis) -----------------------------
    _derived(
        "revenue_per_share",
        "Revenue per share",
        "per_share",
        "USD/share",
        "flow",
        "revenue / shares_outstanding",
        "Revenue for the period divided by shares outstanding at its end, adjusted for all "
        "later stock splits finq knows of; annual and trailing twelve months.",
        ("sales per share",),
    ),
    _derived(
        "book_value_per_share",
        "Book value per share",
        "per_share",
        "USD/share",
        "instant",
        "stockholders_equity / shares_outstanding",
        "Stockholders' equity divided by shares outstanding, adjusted for all later stock "
        "splits finq knows of.",
        ("bvps", "equity per share", "book value a share"),
    ),
    _derived(
        "tangible_book_value_per_share",
        "Tangible book value per share",
        "per_share",
        "USD/share",
        "instant",
        "tangible_book_value / shares_outstanding",
        "Tangible book value divided by shares outstanding, adjusted for all later stock "
        "splits finq knows of.",
        ("tbvps", "tangible bvps"),
    ),
    _derived(
        "free_cash_flow_per_share",
        "Free cash flow per share",
        "per_share",
        "USD/share",
        "flow",
        "free_cash_flow / shares_outstanding",
        "Free cash flow for the period divided by shares outstanding at its end, adjusted for "
        "all later stock splits finq knows of; annual and trailing twelve months.",
        ("fcf per share",),
    ),
    _derived(
        "operating_cash_flow_per_share",
        "Operating cash flow per share",
        "per_share",
        "USD/share",
        "flow",
        "operating_cash_flow / shares_outstanding",
        "Operating cash flow for the period divided by shares outstanding at its end, adjusted "
        "for all later stock splits finq knows of; annual and trailing twelve months.",
        ("cash flow per share", "cfps", "ocf per share"),
    ),
    _derived(
        "cash_per_share",
        "Cash per share",
        "per_share",
        "USD/share",
        "instant",
        "cash_and_short_term_investments / shares_outstanding",
        "Cash, cash equivalents and current marketable securities divided by shares "
        "outstanding, adjusted for all later stock splits finq knows of.",
        ("cash and investments per share",),
    ),
    _derived(
        "ebitda_per_share",
        "EBITDA per share",
        "per_share",
        "USD/share",
        "flow",
        "ebitda / shares_outstanding",
        "EBITDA for the period divided by shares outstanding at its end, adjusted for all "
        "later stock splits finq knows of; annual and trailing twelve months.",
        (),
    ),
    # --- derived: valuation (only where a close at the period end is known) ---------------
    Metric(
        id="period_end_price",
        label="Share price at period end",
        category="valuation",
        unit="USD/share",
        description=(
            "The last daily close on or before the fiscal period end (at most a week before), "
            "as the price file gives it: split-adjusted up to the file's last day. None where "
            "finq holds no prices for the company or the period."
        ),
        # Read from the price files, not from other metrics: no inputs.
        formula="close(period_end)",
        # Neither the id nor an alias is "share price" or "stock price" alone: a question
        # with those words asks for the price tool.
        aliases=("period end share price", "fiscal year end share price"),
        xbrl_tags=(),
        kind="instant",
    ),
    _derived(
        "market_cap",
        "Market capitalization",
        "valuation",
        "USD",
        "instant",
        "period_end_price * shares_outstanding",
        "Period-end close times shares outstanding (brought to the price's split basis).",
        (
            "market cap",
            "market capitalisation",
            "marketcap",
            "mkt cap",
            "market value",
            "market value of equity",
        ),
    ),
    _derived(
        "enterprise_value",
        "Enterprise value",
        "valuation",
        "USD",
        "instant",
        "market_cap + net_debt",
        "Market capitalization plus total debt minus cash and cash equivalents.",
        ("tev", "total enterprise value"),
    ),
    _derived(
        "pe_ratio",
        "P/E ratio",
        "valuation",
        "x",
        "flow",
        "period_end_price / eps_diluted",
        "Period-end close divided by diluted EPS (both on one split basis); annual only (EPS "
        "is not summed over quarters); none for a loss (zero or negative EPS).",
        (
            "p/e",
            "pe",
            "pe ratio",
            "p/e ratio",
            "price earnings ratio",
            "price to earnings",
            "price to earnings ratio",
            "price/earnings",
            "price earnings",
            "earnings multiple",
        ),
    ),
    _derived(
        "price_to_sales",
        "Price to sales",
        "valuation",
        "x",
        "flow",
        "market_cap / revenue",
        "Market capitalization divided by revenue; annual and trailing twelve months.",
        (
            "p/s",
            "p/s ratio",
            "ps ratio",
            "price to sales ratio",
            "price/sales",
            "price to revenue",
        ),
    ),
    _derived(
        "price_to_book",
        "Price to book",
        "valuation",
        "x",
        "instant",
        "market_cap / stockholders_equity",
        "Market capitalization divided by stockholders' equity; none where equity is zero or "
        "negative.",
        ("p/b", "p/b ratio", "pb ratio", "price to book ratio", "price/book", "market to book"),
    ),
    _derived(
        "price_to_tangible_book",
        "Price to tangible book",
        "valuation",
        "x",
        "instant",
        "market_cap / tangible_book_value",
        "Market capitalization divided by tangible book value; none where that is zero or "
        "negative.",
        ("p/tbv", "price to tangible book value"),
    ),
    _derived(
        "price_to_free_cash_flow",
        "Price to free cash flow",
        "valuation",
        "x",
        "flow",
        "market_cap / free_cash_flow",
        "Market capitalization divided by free cash flow; none where free cash flow is zero "
        "or negative.",
        ("p/fcf", "price to fcf", "p/fcf ratio"),
    ),
    _derived(
        "price_to_operating_cash_flow",
        "Price to operating cash flow",
        "valuation",
        "x",
        "flow",
        "market_cap / operating_cash_flow",
        "Market capitalization divided by operating cash flow; none where that is zero or "
        "negative.",
        ("price to cash flow", "p/cf", "p/ocf"),
    ),
    _derived(
        "ev_to_ebitda",
        "EV/EBITDA",
        "valuation",
        "x",
        "flow",
        "enterprise_value / ebitda",
        "Enterprise value divided by EBITDA; none where EBITDA is zero or negative.",
        (
            "ev to ebitda",
            "enterprise value to ebitda",
            "ebitda multiple",
            "enterprise multiple",
        ),
    ),
    _derived(
        "ev_to_sales",
        "EV/Sales",
        "valuation",
        "x",
        "flow",
        "enterprise_value / revenue",
        "Enterprise value divided by revenue.",
        # Not "ev/sales" or "ev revenue": "Tesla's EV sales" means electric vehicles.
        (
            "ev to sales",
            "ev to revenue",
            "enterprise value to sales",
            "enterprise value to revenue",
        ),
    ),
    _derived(
        "ev_to_ebit",
        "EV/EBIT",
        "valuation",
        "x",
        "flow",
        "enterprise_value / operating_income",
        "Enterprise value divided by operating income; none where that is zero or negative.",
        ("ev to ebit", "enterprise value to ebit"),
    ),
    _derived(
        "ev_to_free_cash_flow",
        "EV/FCF",
        "valuation",
        "x",
        "flow",
        "enterprise_value / free_cash_flow",
        "Enterprise value divided by free cash flow; none where that is zero or negative.",
        ("ev to fcf", "ev to free cash flow", "enterprise value to free cash flow"),
    ),
    _derived(
        "earnings_yield",
        "Earnings yield",
        "valuation",
        "%",
        "flow",
        "eps_diluted / period_end_price * 100",
        "Diluted EPS as a percentage of the period-end close (both on one split basis); "
        "negative for a loss.",
        ("e/p",),
    ),
    _derived(
        "free_cash_flow_yield",
        "Free cash flow yield",
        "valuation",
        "%",
        "flow",
        "free_cash_flow / market_cap * 100",
        "Free cash flow as a percentage of market capitalization.",
        ("fcf yield",),
    ),
    _derived(
        "dividend_yield",
        "Dividend yield",
        "valuation",
        "%",
        "flow",
        "dividends_per_share / period_end_price * 100",
        "Dividends per share for the period as a percentage of the period-end close (both on "
        "one split basis).",
        ("dividend yield %", "yield on dividends"),
    ),
    _derived(
        "peg_ratio",
        "PEG ratio",
        "valuation",
        "x",
        "flow",
        "pe_ratio / eps_growth",
        "P/E divided by diluted EPS growth in percent; none where either is zero or negative.",
        ("peg", "price earnings to growth"),
    ),
    # --- derived: capital returns ---------------------------------------------------------
    _derived(
        "capital_returned",
        "Capital returned to shareholders",
        "capital_returns",
        "USD",
        "flow",
        "dividends_paid + share_repurchases",
        "Dividends paid plus share repurchases in the period.",
        (
            "capital returned",
            "cash returned to shareholders",
            "shareholder payouts",
            "dividends and buybacks",
        ),
    ),
    _derived(
        "payout_ratio",
        "Dividend payout ratio",
        "capital_returns",
        "%",
        "flow",
        "dividends_paid / net_income * 100",
        "Dividends paid as a percentage of net income; none for a net loss.",
        ("payout ratio", "dividend payout"),
    ),
    _derived(
        "total_payout_ratio",
        "Total payout ratio",
        "capital_returns",
        "%",
        "flow",
        "capital_returned / net_income * 100",
        "Dividends plus share repurchases as a percentage of net income; none for a net loss.",
        ("total shareholder payout ratio",),
    ),
    _derived(
        "dividend_to_free_cash_flow",
        "Dividends to free cash flow",
        "capital_returns",
        "%",
        "flow",
        "dividends_paid / free_cash_flow * 100",
        "Dividends paid as a percentage of free cash flow; none where free cash flow is zero "
        "or negative.",
        ("fcf payout ratio", "dividends to fcf"),
    ),
    _derived(
        "dividend_coverage",
        "Dividend coverage",
        "capital_returns",
        "x",
        "flow",
        "net_income / dividends_paid",
        "Net income divided by dividends paid; none where no dividend was paid.",
        ("dividend cover", "dividend coverage ratio"),
    ),
    _derived(
        "buyback_yield",
        "Buyback yield",
        "capital_returns",
        "%",
        "flow",
        "share_repurchases / market_cap * 100",
        "Share repurchases in the period as a percentage of the period-end market capitalization.",
        ("repurchase yield", "share buyback yield"),
    ),
    _derived(
        "shareholder_yield",
        "Shareholder yield",
        "capital_returns",
        "%",
        "flow",
        "capital_returned / market_cap * 100",
        "Dividends plus share repurchases in the period as a percentage of the period-end "
        "market capitalization.",
        ("total shareholder yield",),
    ),
)

METRICS_BY_ID: dict[str, Metric] = {metric.id: metric for metric in CATALOG}


def mid_sentence(label: str) -> str:
    """A label as it reads inside a sentence: "Net income" → "net income", "EPS" stays."""
    if len(label) > 1 and label[0].isupper() and label[1].islower():
        return label[0].lower() + label[1:]
    return label
