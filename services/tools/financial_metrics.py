"""`get_financial_metrics`: annual, quarterly and TTM figures with provenance, in one trip."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from services.tools.fiscal_periods import period_label
from services.tools.holdings import describe_holdings
from services.tools.metric_values import MetricValueCache
from services.tools.sql import Fetcher
from services.tools.statement_facts import STATEMENT_FIGURES_SQL, disagree, statement_facts
from services.tools.tool_deps import ToolDeps
from shared.contracts.tool_results import Fact, FigureElsewhere, FormulaInput, Source, ToolResult
from shared.db import acting_as
from shared.english import possessive
from shared.metric_catalog import METRICS_BY_ID, mid_sentence
from shared.tools import GET_FINANCIAL_METRICS, GetFinancialMetricsArgs

# The rows asked for, plus one summary row per (symbol, metric) held, so that a
# missing period can be answered with the periods that are there, in the same trip. A
# derived row carries the figures its formula read (`inputs`), so its arithmetic needs no
# second trip either.
FINANCIAL_METRICS_SQL = """
WITH held AS (
    SELECT v.symbol, c.display_name, v.metric, v.period_type, v.fiscal_year, v.fiscal_quarter,
           v.period_start, v.period_end, v.value, v.unit, v.form, v.accession, v.xbrl_tag,
           v.filed, v.provenance, v.inputs, c.cik,
           row_number() OVER (PARTITION BY v.symbol, v.metric
                              ORDER BY v.fiscal_year DESC, v.fiscal_quarter DESC) AS recency,
           row_number() OVER (PARTITION BY v.symbol, v.metric, v.fiscal_quarter
                              ORDER BY v.fiscal_year DESC) AS quarter_recency,
           min(v.fiscal_year) OVER w AS first_year,
           max(v.fiscal_year) OVER w AS latest_year
    FROM metric_values v
    JOIN companies c ON c.symbol = v.symbol
    WHERE v.symbol = ANY($1::text[]) AND v.metric = ANY($2::text[]) AND v.period_type = $3
    WINDOW w AS (PARTITION BY v.symbol, v.metric)
)
SELECT 'row' AS kind, * FROM held
WHERE CASE
    WHEN $4::int[] IS NOT NULL
        THEN fiscal_year = ANY($4::int[])
             AND ($5::int[] IS NULL OR fiscal_quarter = ANY($5::int[]))
    WHEN $5::int[] IS NOT NULL THEN fiscal_quarter = ANY($5::int[]) AND quarter_recency = 1
    ELSE recency <= $6
END
UNION ALL
SELECT DISTINCT ON (symbol, metric) 'held' AS kind, * FROM held
"""


def edgar_filing_url(cik: str, accession: str) -> str:
    return f"https://www.sec.gov/Archives/edgar/data/{int(cik)}/{accession.replace('-', '')}/"


# A term of a derived formula: a metric id, or one n fiscal years back ("revenue[-1]").
_TERM_RE = re.compile(r"\b([a-z_][a-z0-9_]*)(?:\[-(\d+)\])?")


def formula_inputs(row: Any) -> tuple[str | None, list[FormulaInput]]:
    """A derived row's formula and its inputs in the order the formula reads them; (None,
    []) for a reported row, or one whose inputs were not recorded or name a metric the
    catalog no longer has (half an arithmetic would mislead more than none)."""
    raw = row["inputs"]
    provenance: str = row["provenance"]
    if raw is None or not provenance.startswith("derived:"):
        return None, []
    # asyncpg hands jsonb over as text unless a codec was registered.
    figures: dict[str, float] = json.loads(raw) if isinstance(raw, str) else raw
    formula = provenance.removeprefix("derived:")
    # jsonb orders keys its own way; a reader follows the formula's order.
    position: dict[str, int] = {}
    for match in _TERM_RE.finditer(formula):
        position.setdefault(match.group(0), match.start())
    inputs: list[FormulaInput] = []
    for term in sorted(figures, key=lambda t: position.get(t, len(formula))):
        match = _TERM_RE.fullmatch(term)
        metric = METRICS_BY_ID.get(match.group(1)) if match else None
        if match is None or metric is None or term not in position:
            return None, []
        fiscal_year = row["fiscal_year"] - int(match.group(2) or 0)
        period_type = row["period_type"]
        # A TTM figure reads balances at the end of its last quarter (services.ingest.derived).
        if period_type == "ttm" and metric.kind == "instant":
            period_type = "quarterly"
        quarter = row["fiscal_quarter"]
        inputs.append(
            FormulaInput(
                term=term,
                metric=metric.id,
                metric_label=metric.label,
                value=float(figures[term]),
                unit=metric.unit,
                period=period_label(period_type, fiscal_year, quarter),
                period_type=period_type,
                fiscal_year=fiscal_year,
                fiscal_quarter=quarter or None,
            )
        )
    return formula, inputs


def source_for(row: Any) -> Source:
    period = period_label(row["period_type"], row["fiscal_year"], row["fiscal_quarter"])
    derived = row["provenance"].startswith("derived:")
    if row["accession"] and not derived:
        return Source(
            source_id=f"sec:{row['accession']}:{row['xbrl_tag']}",
            label=f"{row['display_name']} {row['form']} {period}, accession {row['accession']}",
            form=row["form"],
            accession=row["accession"],
            xbrl_tag=row["xbrl_tag"],
            filed=row["filed"],
            url=edgar_filing_url(row["cik"], row["accession"]),
        )
    # Computed by finq from stored figures: the formula names its inputs.
    return Source(
        source_id=f"derived:{row['symbol']}:{row['metric']}:{period.replace(' ', '_')}",
        label=f"{row['display_name']} {period}, {row['provenance']}",
        form=row["form"],
        accession=row["accession"],
        filed=row["filed"],
        url=edgar_filing_url(row["cik"], row["accession"])
        if row["accession"] and row["cik"]
        else None,
    )


async def get_financial_metrics(
    db: Fetcher,
    args: GetFinancialMetricsArgs,
    values: MetricValueCache | None = None,
    statements: Fetcher | None = None,
) -> ToolResult:
    """The figures asked for, from `values` (memory, kept current) when given; what no XBRL
    figure holds, from the filings' own statements as `statements` (the asking user's view
    of the database) sees them."""
    query = (
        args.symbols,
        args.metrics,
        args.period,
        args.fiscal_years,
        args.fiscal_quarters,
        args.last or 1,
    )
    rows: list[Any] = (
        await values.rows(db, *query)
        if values is not None
        else await db.fetch(FINANCIAL_METRICS_SQL, *query)
    )
    facts: list[Fact] = []
    sources: dict[str, Source] = {}
    found: set[tuple[str, str, int, int]] = set()
    held: dict[tuple[str, str], Any] = {}
    names: dict[str, str] = {}
    for row in rows:
        names[row["symbol"]] = row["display_name"]
        if row["kind"] == "held":
            held[(row["symbol"], row["metric"])] = row
            continue
        source = source_for(row)
        sources.setdefault(source.source_id, source)
        quarter = row["fiscal_quarter"]
        found.add((row["symbol"], row["metric"], row["fiscal_year"], quarter))
        formula, inputs = formula_inputs(row)
        facts.append(
            Fact(
                symbol=row["symbol"],
                company=row["display_name"],
                metric=row["metric"],
                metric_label=METRICS_BY_ID[row["metric"]].label,
                period=period_label(row["period_type"], row["fiscal_year"], quarter),
                period_type=row["period_type"],
                fiscal_year=row["fiscal_year"],
                fiscal_quarter=quarter or None,
                period_start=row["period_start"],
                period_end=row["period_end"],
                value=row["value"],
                unit=row["unit"],
                source_id=source.source_id,
                formula=formula,
                inputs=inputs,
            )
        )
    asked = {
        (symbol, metric, year)
        for symbol in args.symbols
        for metric in args.metrics
        for year in args.fiscal_years or []
    }
    stated: list[Fact] = []
    if statements is not None and asked and args.period != "ttm":
        rows_read = await statements.fetch(STATEMENT_FIGURES_SQL, list(args.symbols))
        if rows_read:
            facts, stated = with_statements(facts, sources, rows_read, args, asked)
            for fact in stated:
                names.setdefault(fact.symbol, fact.company)
                found.add((fact.symbol, fact.metric, fact.fiscal_year, fact.fiscal_quarter or 0))
            stated_years: dict[tuple[str, str], list[int]] = defaultdict(list)
            for fact in stated:
                stated_years[(fact.symbol, fact.metric)].append(fact.fiscal_year)
            for key, years in stated_years.items():
                # What is held is what XBRL holds and what the statements state, together.
                if key in held:
                    years = [*years, held[key]["first_year"], held[key]["latest_year"]]
                held[key] = {"first_year": min(years), "latest_year": max(years)}
    if args.formula is not None:
        facts, missing_by_formula = by_the_questions_formula(facts, args, stated)
    else:
        missing_by_formula = []
    if args.limit is not None:
        facts = latest_periods(facts, args.limit)
    # Order as asked: company, then metric, then period.
    symbol_order = {s: i for i, s in enumerate(args.symbols)}
    metric_order = {m: i for i, m in enumerate(args.metrics)}
    facts.sort(
        key=lambda f: (
            symbol_order[f.symbol],
            metric_order[f.metric],
            f.fiscal_year,
            f.fiscal_quarter or 0,
        )
    )
    unheld = [symbol for symbol in args.symbols if symbol not in names]
    holdings = await describe_holdings(db, unheld) if unheld else {}
    return ToolResult(
        tool=GET_FINANCIAL_METRICS,
        arguments=args,
        facts=facts,
        sources=list(sources.values()),
        missing=[*describe_missing(args, names, held, found, holdings), *missing_by_formula],
    )


def by_the_questions_formula(
    facts: list[Fact], args: GetFinancialMetricsArgs, computed: list[Fact]
) -> tuple[list[Fact], list[str]]:
    """The facts without any of the defined figure but those `computed` by the question's
    formula (from the statements): finq's own formula, from XBRL, is another figure. And
    what that leaves unanswered."""
    [defined] = args.metrics
    by_formula = {id(fact) for fact in computed}
    kept = [f for f in facts if f.metric != defined or id(f) in by_formula]
    label = mid_sentence(METRICS_BY_ID[defined].label)
    missing = [
        f"{possessive(f.company)} {label} in {f.period} by the question's formula (finq holds "
        "no filing statements to compute it from; its own formula differs)"
        for f in facts
        if f not in kept
    ]
    return kept, missing


def with_statements(
    facts: list[Fact],
    sources: dict[str, Source],
    rows: Sequence[Any],
    args: GetFinancialMetricsArgs,
    asked: set[tuple[str, str, int]],
) -> tuple[list[Fact], list[Fact]]:
    """The XBRL facts joined with what the filings' statements state of the periods asked
    (`sources` gains theirs): a figure no XBRL fact holds, one asked "as filed"
    (args.as_filed), and one both give alike come from the statement, citing its page; where
    a statement and the XBRL data disagree beyond rounding, the XBRL figure is shown (the
    statement's, when asked as filed) and carries the other (Fact.differs). All facts, and
    those taken from the statements."""
    stated, stated_sources = statement_facts(rows, args, asked)
    for source in stated_sources:
        sources.setdefault(source.source_id, source)
    xbrl = {(f.symbol, f.metric, f.fiscal_year, f.fiscal_quarter): f for f in facts}
    taken: list[Fact] = []
    for fact in stated:
        key = (fact.symbol, fact.metric, fact.fiscal_year, fact.fiscal_quarter)
        other = xbrl.get(key)
        # The statement's cell is shown where it is asked for, where XBRL holds nothing, and
        # where the two agree: the same figure, cited by the page a reader can check.
        agreed = (
            other is not None
            and fact.formula is None
            and other.formula is None
            and not disagree(fact, other)
        )
        if other is None or args.as_filed is not None or agreed or args.formula is not None:
            shown, elsewhere = fact, other
            xbrl[key] = fact
            taken.append(fact)
        else:
            shown, elsewhere = other, fact
        if (
            other is not None
            and elsewhere is not None  # always so when `other` is; said for the type checker
            and fact.formula is None
            and other.formula is None
            and disagree(fact, other)
        ):
            shown.differs = FigureElsewhere(value=elsewhere.value, source_id=elsewhere.source_id)
    # Order is restored by the caller; which facts are shown is what matters here.
    return list(xbrl.values()), taken


def latest_periods(facts: list[Fact], limit: int) -> list[Fact]:
    """At most `limit` facts per company and metric, the latest periods kept."""
    kept: dict[tuple[str, str], list[Fact]] = {}
    for fact in sorted(facts, key=lambda f: (f.fiscal_year, f.fiscal_quarter or 0), reverse=True):
        group = kept.setdefault((fact.symbol, fact.metric), [])
        if len(group) < limit:
            group.append(fact)
    return [fact for group in kept.values() for fact in group]


def describe_missing(
    args: GetFinancialMetricsArgs,
    names: dict[str, str],
    held: dict[tuple[str, str], Any],
    found: set[tuple[str, str, int, int]],
    holdings: dict[str, tuple[str, str]],
) -> list[str]:
    """What was asked and is not held, each with what is held instead."""
    kind = {"annual": "", "quarterly": "quarterly ", "ttm": "trailing-twelve-month "}[args.period]
    wanted_quarters = args.fiscal_quarters if args.period != "annual" else None
    missing: list[str] = []
    for symbol in args.symbols:
        for metric in args.metrics:
            label = mid_sentence(METRICS_BY_ID[metric].label)
            company = names.get(symbol, symbol)
            span = held.get((symbol, metric))
            if span is None:
                if symbol in holdings:
                    company, what = holdings[symbol]
                    missing.append(f"{possessive(company)} {kind}{label} ({what})")
                elif symbol in names:
                    missing.append(f"{possessive(company)} {kind}{label} (none held for {symbol})")
                else:
                    missing.append(
                        f"{possessive(symbol)} {kind}{label} (finq knows no such company)"
                    )
                continue
            available = f"held: fiscal {span['first_year']} to {span['latest_year']}"
            for year in args.fiscal_years or []:
                got = {q for (s, m, y, q) in found if (s, m, y) == (symbol, metric, year)}
                if wanted_quarters:
                    for quarter in wanted_quarters:
                        if quarter not in got:
                            missing.append(
                                f"{possessive(company)} {kind}{label} in Q{quarter} of fiscal "
                                f"{year} ({available})"
                            )
                elif not got:
                    missing.append(
                        f"{possessive(company)} {kind}{label} in fiscal {year} ({available})"
                    )
    return missing


async def run(args: GetFinancialMetricsArgs, deps: ToolDeps) -> ToolResult:
    return await get_financial_metrics(
        deps.db, args, deps.metric_values, statements=acting_as(deps.db, deps.user_id)
    )
