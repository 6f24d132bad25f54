"""Deterministic wording of fetched figures: money, per-share amounts and cited sentences.

The validator re-reads these strings, so every figure is shown with enough digits that its
rounding stays well inside the validator's 2% cap (see `_ROUNDING_BUDGET`).
"""

from __future__ import annotations

from shared.contracts import Citation, Fact, Source
from shared.metric_catalog import mid_sentence

# Rounding we allow ourselves when shortening a figure, relative to its value. Half the
# validator's 2% cap, so float noise at the boundary can never make our own text fail.
_ROUNDING_BUDGET = 0.01

# (threshold, divisor, word): a value moves to the larger word once it would round to
# 1,000 of the smaller one, so 999.96 billion reads "$1.0 trillion", not "$1,000.0 billion".
_MONEY_SCALES: tuple[tuple[float, float, str], ...] = (
    (0.9995e12, 1e12, "trillion"),
    (0.9995e9, 1e9, "billion"),
    (0.9995e6, 1e6, "million"),
)


# Enough places for any figure a filing holds; only a cap against a runaway loop.
_MAX_PLACES = 12


def _fixed(value: float, places: int) -> str:
    """`value` with thousands separators to `places` decimals, or more when `places` would
    round it off by more than the budget (1.24 → "1.24", not "1.2"; $0.0042 → "$0.0042")."""
    shown = f"{value:,.{places}f}"
    while places < _MAX_PLACES:
        if abs(float(shown.replace(",", "")) - value) <= _ROUNDING_BUDGET * abs(value):
            break
        places += 1
        shown = f"{value:,.{places}f}"
    return shown


def _signed(value: float, body: str) -> str:
    # The minus goes before the currency sign ("-$1.2 billion"), as people write it, and is
    # dropped when the shown digits are all zero, since "-$0" reads as a typo.
    return f"-{body}" if value < 0 and body.strip("$0.,") else body


def format_money(value: float) -> str:
    """USD: "$383.3 billion", "$1.2 trillion", "$950.2 million", "$12,345", "-$1.2 billion"."""
    magnitude = abs(value)
    for threshold, divisor, word in _MONEY_SCALES:
        if magnitude >= threshold:
            return _signed(value, f"${_fixed(magnitude / divisor, 1)} {word}")
    return _signed(value, f"${_fixed(magnitude, 0)}")


def format_per_share(value: float) -> str:
    """USD per share: "$6.13", "-$0.11"."""
    return _signed(value, f"${_fixed(abs(value), 2)}")


def format_value(value: float, unit: str) -> str:
    """A fact's value in its unit. "%" values are percentage points (44.1 → "44.1%")."""
    if unit == "USD":
        return format_money(value)
    if unit == "USD/share":
        return format_per_share(value)
    if unit == "%":
        return f"{_fixed(value, 1)}%"
    if unit == "shares":
        return f"{round(value):,} shares"
    if unit == "x":
        return f"{_fixed(value, 1)}×"
    if unit == "days":
        return f"{_fixed(value, 1)} days"
    return f"{_fixed(value, 2)} {unit}"


def possessive(name: str) -> str:
    """ "NVIDIA's", "Apple's", "Walgreens'"; only a lowercase final s takes the bare
    apostrophe, since acronyms ending in S ("AWS's") keep the full form."""
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def _when(fact: Fact) -> str:
    """The period phrase, including its end date, for the sentence about `fact`."""
    ended = fact.period_end.isoformat()
    if fact.period_type == "ttm":
        return f"for the twelve months ended {ended}"
    if fact.period_type == "quarterly":
        quarter = f"Q{fact.fiscal_quarter}" if fact.fiscal_quarter else "the quarter"
        return f"in {quarter} of fiscal {fact.fiscal_year} (ended {ended})"
    return f"in fiscal {fact.fiscal_year} (ended {ended})"


def _provenance(source: Source | None) -> str:
    """ " (10-K, accession …)" when the filing is known; derived figures are cited only
    in the citation list, so no free-form label text (which may hold numbers) enters the prose."""
    if source is None:
        return ""
    parts = [source.form] if source.form else []
    if source.accession:
        parts.append(f"accession {source.accession}")
    return f" ({', '.join(parts)})" if parts else ""


def _citation(fact: Fact, source: Source) -> Citation:
    if source.accession:
        label = (
            f"{fact.company} {source.form or 'filing'} {fact.period}, accession {source.accession}"
        )
        if source.xbrl_tag:
            label += f" ({source.xbrl_tag})"
    else:
        label = source.label
    return Citation(
        source_id=source.source_id,
        label=label,
        form=source.form,
        accession=source.accession,
        url=source.url,
    )


def compose_metric_answer(
    facts: list[Fact], sources: list[Source], missing: list[str]
) -> tuple[str, list[Citation]]:
    """One sentence per fact, in the order given, then one per missing item; one citation
    per distinct source used. A fact whose source was not fetched is stated but not cited,
    since citing an unknown source is exactly what the validator rejects."""
    by_id = {source.source_id: source for source in sources}
    sentences: list[str] = []
    citations: dict[str, Citation] = {}
    for fact in facts:
        source = by_id.get(fact.source_id)
        sentences.append(
            f"{possessive(fact.company)} {mid_sentence(fact.metric_label)} {_when(fact)} was "
            f"{format_value(fact.value, fact.unit)}{_provenance(source)}."
        )
        if source is not None and source.source_id not in citations:
            citations[source.source_id] = _citation(fact, source)
    sentences.extend(_missing_sentences(missing))
    if not sentences:
        sentences.append("No figures were found for this question.")
    return " ".join(sentences), list(citations.values())


def _source_citation(source: Source) -> Citation:
    return Citation(
        source_id=source.source_id,
        label=source.label,
        form=source.form,
        accession=source.accession,
        url=source.url,
    )


def _missing_sentences(missing: list[str], noun: str = "No figure is") -> list[str]:
    return [f"{noun} held for {item.strip().rstrip('.')}." for item in missing]


def compose_price_answer(
    facts: list[Fact], sources: list[Source], missing: list[str]
) -> tuple[str, list[Citation]]:
    """Closing prices over a window: first and last close, the change, the high and the low.

    The closes are as the source file gives them: adjusted for splits up to its download,
    not for dividends. The answer says so, because either changes what a close means.
    """
    by_metric = {fact.metric: fact for fact in facts}
    sentences: list[str] = []
    first, last = by_metric.get("close_first"), by_metric.get("close_last")
    if first is not None and last is not None:
        company = possessive(first.company)
        if first.period_end == last.period_end:
            sentences.append(
                f"{company} stock closed at {format_per_share(first.value)} on "
                f"{first.period_end.isoformat()} (split-adjusted, not dividend-adjusted)."
            )
        else:
            change = by_metric.get("close_change_pct")
            change_text = (
                f", a change of {'+' if change.value > 0 else ''}{change.value:.1f}%"
                if change is not None
                else ""
            )
            sentences.append(
                f"{company} closing price (split-adjusted, not dividend-adjusted) went from "
                f"{format_per_share(first.value)} on {first.period_end.isoformat()} to "
                f"{format_per_share(last.value)} on {last.period_end.isoformat()}{change_text}."
            )
            high, low = by_metric.get("close_high"), by_metric.get("close_low")
            if high is not None and low is not None:
                sentences.append(
                    f"Its highest close in that window was {format_per_share(high.value)} on "
                    f"{high.period_end.isoformat()} and its lowest "
                    f"{format_per_share(low.value)} on {low.period_end.isoformat()}."
                )
    sentences.extend(_missing_sentences(missing, "No data is"))
    if not sentences:
        sentences.append("No prices were found for this question.")
    return " ".join(sentences), [_source_citation(source) for source in sources]


def compose_filings_answer(
    company: str, sources: list[Source], missing: list[str]
) -> tuple[str, list[Citation]]:
    """The filings found, newest first, each with its period, filing date and accession."""
    sentences: list[str] = []
    if sources:
        items = []
        for source in sources:
            period = ""
            if source.fiscal_year is not None:
                quarter = f"Q{source.fiscal_quarter} " if source.fiscal_quarter else ""
                period = f" for {quarter}fiscal {source.fiscal_year}"
            if source.period_end is not None:
                period += f" (period ended {source.period_end.isoformat()})"
            filed = f", filed {source.filed.isoformat()}" if source.filed else ""
            items.append(f"{source.form}{period}{filed}, accession {source.accession}")
        noun = "filing" if len(items) == 1 else "filings"
        sentences.append(f"{possessive(company)} {noun}: " + "; ".join(items) + ".")
    sentences.extend(_missing_sentences(missing, "No data is"))
    if not sentences:
        sentences.append("No filings were found for this question.")
    return " ".join(sentences), [_source_citation(source) for source in sources]
