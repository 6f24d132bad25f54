"""`get_financial_metrics`: annual figures with provenance, in one SQL round-trip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from shared.contracts import Fact, Source, ToolResult
from shared.metric_catalog import METRICS_BY_ID
from shared.tool_schemas import GET_FINANCIAL_METRICS, GetFinancialMetricsArgs

# The rows asked for, plus one summary row per (symbol, metric) held, so that a
# missing year can be answered with the years that are there, in the same trip.
FINANCIAL_METRICS_SQL = """
WITH held AS (
    SELECT v.symbol, c.display_name, v.metric, v.fiscal_year, v.period_start, v.period_end,
           v.value, v.unit, v.form, v.accession, v.xbrl_tag, v.filed, v.provenance, c.cik,
           max(v.fiscal_year) OVER w AS latest_year,
           min(v.fiscal_year) OVER w AS first_year
    FROM metric_values v
    JOIN companies c ON c.symbol = v.symbol
    WHERE v.symbol = ANY($1::text[]) AND v.metric = ANY($2::text[])
      AND v.period_type = 'annual'
    WINDOW w AS (PARTITION BY v.symbol, v.metric)
)
SELECT 'row' AS kind, * FROM held
WHERE CASE WHEN $3::int[] IS NULL THEN fiscal_year = latest_year
           ELSE fiscal_year = ANY($3::int[]) END
UNION ALL
SELECT DISTINCT ON (symbol, metric) 'held' AS kind, * FROM held
"""


class Fetcher(Protocol):
    async def fetch(self, query: str, *args: Any) -> Sequence[Any]: ...


def edgar_filing_url(cik: str, accession: str) -> str:
    return f"https://www.sec.gov/Archives/edgar/data/{int(cik)}/{accession.replace('-', '')}/"


def source_for(row: Any) -> Source:
    if row["accession"]:
        return Source(
            source_id=f"sec:{row['accession']}:{row['xbrl_tag']}",
            label=(
                f"{row['display_name']} {row['form']} FY{row['fiscal_year']}, "
                f"accession {row['accession']}"
            ),
            form=row["form"],
            accession=row["accession"],
            xbrl_tag=row["xbrl_tag"],
            filed=row["filed"],
            url=edgar_filing_url(row["cik"], row["accession"]),
        )
    return Source(
        source_id=f"derived:{row['symbol']}:{row['metric']}:FY{row['fiscal_year']}",
        label=f"{row['display_name']} {row['provenance']}",
    )


async def get_financial_metrics(db: Fetcher, args: GetFinancialMetricsArgs) -> ToolResult:
    rows = await db.fetch(FINANCIAL_METRICS_SQL, args.symbols, args.metrics, args.fiscal_years)
    facts: list[Fact] = []
    sources: dict[str, Source] = {}
    found: set[tuple[str, str, int]] = set()
    held: dict[tuple[str, str], Any] = {}
    names: dict[str, str] = {}
    for row in rows:
        names[row["symbol"]] = row["display_name"]
        if row["kind"] == "held":
            held[(row["symbol"], row["metric"])] = row
            continue
        source = source_for(row)
        sources.setdefault(source.source_id, source)
        found.add((row["symbol"], row["metric"], row["fiscal_year"]))
        facts.append(
            Fact(
                symbol=row["symbol"],
                company=row["display_name"],
                metric=row["metric"],
                metric_label=METRICS_BY_ID[row["metric"]].label,
                period=f"FY{row['fiscal_year']}",
                fiscal_year=row["fiscal_year"],
                period_start=row["period_start"],
                period_end=row["period_end"],
                value=row["value"],
                unit=row["unit"],
                source_id=source.source_id,
            )
        )
    # Order as asked: company, then metric, then year.
    symbol_order = {s: i for i, s in enumerate(args.symbols)}
    metric_order = {m: i for i, m in enumerate(args.metrics)}
    facts.sort(key=lambda f: (symbol_order[f.symbol], metric_order[f.metric], f.fiscal_year))

    missing: list[str] = []
    for symbol in args.symbols:
        for metric in args.metrics:
            label = METRICS_BY_ID[metric].label
            company = names.get(symbol, symbol)
            span = held.get((symbol, metric))
            if span is None:
                missing.append(f"{company}'s {label} (finq holds no {label} figures for {symbol})")
                continue
            for year in args.fiscal_years or []:
                if (symbol, metric, year) not in found:
                    missing.append(
                        f"{company}'s {label} in fiscal {year} (held: fiscal "
                        f"{span['first_year']} to {span['latest_year']})"
                    )
    return ToolResult(
        tool=GET_FINANCIAL_METRICS,
        arguments=args.model_dump(exclude_none=True),
        facts=facts,
        sources=list(sources.values()),
        missing=missing,
    )
