"""Figures a company's own filing states, for what finq holds no XBRL figure of: the cells of
its income statement, balance sheet and cash-flow statement (stored at ingest in
`statement_figures`, services/ingest/statements.py), read as the same catalog metrics, and
the derived ones (growth, margins, total debt, days payable) computed from them with the
formulas XBRL figures use (`services.ingest.derived.derive_metrics`).

Every fact cites its statement's page: a reported one the cell it was read from, a derived
one the pages of its inputs. Which rows a user sees is row-level security's business: the
public filings and the user's own uploads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import Any

from services.ingest.companyfacts import MetricValueRecord
from services.ingest.derived import DerivedValueRecord, derive_by_formula, derive_metrics
from services.tools.fiscal_periods import period_label
from shared.contracts.tool_results import Fact, FormulaInput, Source
from shared.metric_catalog import METRICS_BY_ID, formula_inputs
from shared.tools import AsFiled, GetFinancialMetricsArgs

STATEMENT_FIGURES_SQL = """
SELECT f.symbol, f.metric, f.statement, f.period_end, f.months, f.fiscal_year,
       f.value, f.unit, f.page, f.document_id::text AS document_id, d.title, d.form, d.filed,
       d.period_end AS document_period_end, d.fiscal_year AS document_fiscal_year,
       d.fiscal_quarter AS document_fiscal_quarter,
       coalesce(c.display_name, f.symbol) AS company
FROM statement_figures f
JOIN documents d ON d.id = f.document_id
LEFT JOIN companies c ON c.symbol = f.symbol
WHERE f.symbol = ANY($1::text[]) AND f.metric IS NOT NULL AND d.status = 'ready'
ORDER BY d.period_end DESC NULLS LAST, d.filed DESC NULLS LAST
"""
_PROVENANCE = "statement:"


@dataclass(frozen=True)
class StatementCell:
    """Where a statement figure stands: its filing and page."""

    document_id: str
    title: str
    form: str | None
    filed: date | None
    page: int
    company: str


def _period(row: Any) -> tuple[str, int] | None:
    """A row's period type and fiscal quarter (0 for a year), or None for a period finq
    keeps no figures of (six or nine months to date)."""
    months, quarter = row["months"], row["document_fiscal_quarter"]
    if months is None:
        # A balance at the end of the quarter a 10-Q covers is that quarter's; any other (a
        # 10-K's, or a 10-Q's column for the last year end) is its fiscal year's.
        if row["form"] == "10-Q" and quarter and row["period_end"] == row["document_period_end"]:
            return "quarterly", quarter
        return "annual", 0
    if months == 12:
        return "annual", 0
    if months == 3 and row["form"] == "10-Q" and quarter:
        # A 10-Q's three months are its quarter, this year's or the same quarter last year's.
        return "quarterly", quarter
    return None


def _filing_rank(row: Any, as_filed: AsFiled | None) -> int:
    """How well a row's filing is the one asked for: 0 the filing named (by form and year;
    without a year, the period's own filing), 1 a filing of the form named, 2 any other."""
    if as_filed is None:
        return 0
    form_fits = as_filed.form is None or row["form"] == as_filed.form
    year = as_filed.fiscal_year if as_filed.fiscal_year is not None else row["fiscal_year"]
    if form_fits and row["document_fiscal_year"] == year:
        return 0
    return 1 if form_fits else 2


def statement_records(
    rows: Sequence[Any], as_filed: AsFiled | None = None
) -> tuple[list[MetricValueRecord], dict[str, StatementCell]]:
    """One record per company, metric and period, from the filing asked for (`as_filed`)
    when it states it, else from the latest filing that states it (a later filing's
    restated column wins), and where each record's cell stands."""
    records: dict[tuple[str, str, str, int, int], MetricValueRecord] = {}
    cells: dict[str, StatementCell] = {}
    # Newest filing first as fetched; the filing asked for before all others (stable).
    for row in sorted(rows, key=lambda row: _filing_rank(row, as_filed)):
        period = _period(row)
        if period is None or row["fiscal_year"] is None:
            continue
        period_type, quarter = period
        key = (row["symbol"], row["metric"], period_type, row["fiscal_year"], quarter)
        if key in records:
            continue
        provenance = f"{_PROVENANCE}{row['document_id']}:p{row['page']}"
        months = row["months"]
        records[key] = MetricValueRecord(
            symbol=row["symbol"],
            metric=row["metric"],
            period_type=period_type,
            fiscal_year=row["fiscal_year"],
            fiscal_quarter=quarter,
            period_start=(
                row["period_end"] - timedelta(days=round(months * 30.44)) if months else None
            ),
            period_end=row["period_end"],
            value=row["value"],
            unit=row["unit"],
            form=row["form"],
            accession=None,
            xbrl_tag=None,
            filed=row["filed"],
            provenance=provenance,
        )
        cells[provenance] = StatementCell(
            document_id=row["document_id"],
            title=row["title"],
            form=row["form"],
            filed=row["filed"],
            page=row["page"],
            company=row["company"],
        )
    return list(records.values()), cells


def _source(cell: StatementCell) -> Source:
    # One source per statement page: the lines read on it are cited by their page alone, so
    # no line's label stands for another's.
    return Source(
        source_id=f"doc:{cell.document_id}:p{cell.page}",
        label=f"{cell.title}, page {cell.page}",
        form=cell.form,
        page=cell.page,
        filed=cell.filed,
    )


def statement_facts(
    rows: Sequence[Any], args: GetFinancialMetricsArgs, wanted: set[tuple[str, str, int]]
) -> tuple[list[Fact], list[Source]]:
    """The asked figures (`wanted`: company, metric, fiscal year; of the quarters
    args.fiscal_quarters names, for quarterly figures) the statements state or their
    formulas derive from what the statements state, from the filing `args.as_filed` names
    where it states them."""
    records, cells = statement_records(rows, args.as_filed)
    derived = derive_metrics(records)
    if args.formula is not None:
        # The figure as the question defines it, not as the catalog does.
        [defined] = args.metrics
        metric = replace(
            METRICS_BY_ID[defined], formula=args.formula, inputs=formula_inputs(args.formula)
        )
        derived = [r for r in derived if r.metric != defined] + derive_by_formula(records, metric)
    reported = {
        (r.symbol, r.metric, r.period_type, r.fiscal_year, r.fiscal_quarter): r for r in records
    }
    facts: list[Fact] = []
    sources: dict[str, Source] = {}
    for record in [*records, *derived]:
        if record.period_type != args.period:
            continue
        if (record.symbol, record.metric, record.fiscal_year) not in wanted:
            continue
        if args.fiscal_quarters and record.fiscal_quarter not in args.fiscal_quarters:
            continue
        inputs: list[FormulaInput] = []
        formula: str | None = None
        if isinstance(record, DerivedValueRecord):
            if record.period_type != "annual" and any("[-" in t for t, _ in record.inputs):
                continue  # a quarter's growth is computed by the answerer, across filings
            formula = record.provenance.removeprefix("derived:")
            cited = []
            for term, value in record.inputs:
                name = term.split("[")[0]
                lag = 1 if "[-1]" in term else 0
                year = record.fiscal_year - lag
                source = reported.get(
                    (record.symbol, name, record.period_type, year, record.fiscal_quarter)
                )
                if source is None or name not in METRICS_BY_ID:
                    continue
                cited.append(cells[source.provenance])
                inputs.append(
                    FormulaInput(
                        term=term,
                        metric=name,
                        metric_label=METRICS_BY_ID[name].label,
                        value=value,
                        unit=METRICS_BY_ID[name].unit,
                        period=period_label(record.period_type, year, record.fiscal_quarter),
                        period_type=record.period_type,
                        fiscal_year=year,
                        page=cells[source.provenance].page,
                    )
                )
            if not cited:
                continue
            for cell in cited:
                sources.setdefault(_source(cell).source_id, _source(cell))
            source_id = _source(cited[0]).source_id
            company = cited[0].company
        else:
            cell = cells[record.provenance]
            source = _source(cell)
            sources.setdefault(source.source_id, source)
            source_id, company = source.source_id, cell.company
        facts.append(
            Fact(
                symbol=record.symbol,
                company=company,
                metric=record.metric,
                metric_label=METRICS_BY_ID[record.metric].label,
                period=period_label(record.period_type, record.fiscal_year, record.fiscal_quarter),
                period_type=record.period_type,
                fiscal_year=record.fiscal_year,
                fiscal_quarter=record.fiscal_quarter or None,
                period_start=record.period_start,
                period_end=record.period_end,
                value=record.value,
                unit=record.unit,
                source_id=source_id,
                formula=formula,
                inputs=inputs,
            )
        )
    return facts, list(sources.values())


def rounding_of(value: float, unit: str) -> float:
    """How far a statement's figure may stand from the exact one by its rounding alone: half
    its last written digit, read from the value (a figure "in millions" is a whole number of
    millions), half a cent for per-share amounts."""
    if unit == "USD/share":
        return 0.005
    whole = round(abs(value))
    step = 1
    while step < 1_000_000 and whole and whole % (step * 10) == 0:
        step *= 10
    return step / 2


def disagree(statement: Fact, other: Fact) -> bool:
    """Whether two sources' figures for one period differ by more than the statement's
    rounding (and float noise)."""
    allowed = rounding_of(statement.value, statement.unit) + 1e-9 * abs(other.value)
    return abs(statement.value - other.value) > allowed
