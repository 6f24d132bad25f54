"""Deterministic wording of fetched figures: money, per-share amounts and cited sentences.

The validator re-reads these strings; values are written by `shared.value_formatting`, with
enough digits that their rounding stays well inside the validator's 2% cap.

A derived figure is followed by its arithmetic, written from the fact's formula and
inputs: "…was 44.1%: gross profit $169.1 billion / revenue $383.3 billion × 100 = 44.1%."
Each input shows in its own unit, an earlier period's input names its period, and an
average of two balances reads as one ("average stockholders' equity ($62.1 billion when
fiscal 2023 closed and $50.7 billion when fiscal 2022 closed)").
"""

from __future__ import annotations

import ast
from functools import lru_cache

from shared.contracts.answers import Citation
from shared.contracts.tool_results import Fact, FormulaInput, Source
from shared.english import possessive
from shared.metric_catalog import mid_sentence
from shared.value_formatting import (
    format_as_stated,
    format_fact_value,
    format_in_words,
    format_per_share,
    format_value,
)


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
    if source.page is not None:
        # A figure read from a filing's own statement: the page its cell stands on.
        parts.append(f"page {source.page}")
    return f" ({', '.join(parts)})" if parts else ""


def fact_citation(fact: Fact, source: Source) -> Citation:
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
        page=source.page,
    )


# --- a derived figure's arithmetic -----------------------------------------------------

# How a reader writes the operators; "−" (the minus sign) keeps subtraction apart from a
# negative figure's "-".
_OPERATORS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "−",
    ast.Mult: "×",
    ast.Div: "/",
    ast.Pow: "^",
}
_PRECEDENCE: dict[type[ast.operator], int] = {
    ast.Add: 1,
    ast.Sub: 1,
    ast.Mult: 2,
    ast.Div: 2,
    ast.Pow: 3,
}
# An operand that never needs brackets: a term, a constant, an average.
_ATOMIC = 4
# Share counts and per-share amounts: a constant applied to one of them is the stock-split
# factor the ingest brought it to one share basis with (services.ingest.derived).
_SPLIT_UNITS = frozenset({"shares", "USD/share"})


class _Unrenderable(Exception):
    """The formula holds something the arithmetic cannot show (an unknown term or node)."""


@lru_cache(maxsize=512)
def _parse_formula(formula: str) -> ast.expr | None:
    # A few hundred distinct formulas at most: parse each once per process.
    try:
        return ast.parse(formula, mode="eval").body
    except SyntaxError:
        return None


def _period_phrase(period_type: str, fiscal_year: int, fiscal_quarter: int | None) -> str:
    if period_type == "quarterly" and fiscal_quarter:
        return f"Q{fiscal_quarter} of fiscal {fiscal_year}"
    if period_type == "ttm" and fiscal_quarter:
        return f"the twelve months to Q{fiscal_quarter} of fiscal {fiscal_year}"
    return f"fiscal {fiscal_year}"


def _input_value(item: FormulaInput) -> str:
    # A share count reads in words inside arithmetic ("15.9 billion"); its label says shares.
    if item.unit == "shares":
        return format_in_words(item.value)
    if item.page is not None:
        return format_as_stated(item.value, item.unit)
    return format_value(item.value, item.unit)


class _Arithmetic:
    """Writes one fact's formula with its inputs in place of its terms."""

    def __init__(self, fact: Fact) -> None:
        self.fact = fact
        self.inputs = {item.term: item for item in fact.inputs}

    def _input(self, node: ast.expr) -> FormulaInput | None:
        if isinstance(node, ast.Name | ast.Subscript):
            item = self.inputs.get(ast.unparse(node))
            if item is None:
                raise _Unrenderable(ast.unparse(node))
            return item
        return None

    def _term(self, item: FormulaInput) -> str:
        text = f"{mid_sentence(item.metric_label)} {_input_value(item)}"
        if item.period == self.fact.period:
            return text
        # An earlier year's figure (growth, CAGR) says which year it is.
        when = _period_phrase(item.period_type, item.fiscal_year, item.fiscal_quarter)
        return f"{when} {mid_sentence(item.metric_label)} {_input_value(item)}"

    def _average(self, node: ast.BinOp) -> str | None:
        """ "(x + x[-1]) / 2" as "average x ($A when fiscal 2023 closed and $B when fiscal 2022
        closed)": avg() only ever averages a balance with the one a year earlier."""
        if not (
            isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value == 2
            and isinstance(node.left, ast.BinOp)
            and isinstance(node.left.op, ast.Add)
        ):
            return None
        closing, opening = self._input(node.left.left), self._input(node.left.right)
        if closing is None or opening is None or closing.metric != opening.metric:
            return None
        ends = [
            f"{_input_value(item)} at the end of "
            f"{_period_phrase(item.period_type, item.fiscal_year, item.fiscal_quarter)}"
            for item in (closing, opening)
        ]
        return f"average {mid_sentence(closing.metric_label)} ({ends[0]} and {ends[1]})"

    def render(self, node: ast.expr) -> tuple[str, int]:
        """The text of `node` and its precedence, for bracketing by the caller."""
        item = self._input(node)
        if item is not None:
            return self._term(item), _ATOMIC
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return f"{node.value:g}", _ATOMIC
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            text, precedence = self.render(node.operand)
            return f"−({text})" if precedence < _ATOMIC else f"−{text}", _ATOMIC
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            average = self._average(node)
            if average is not None:
                return average, _ATOMIC
            left = self._operand(node.left, node.op, right=False)
            right = self._operand(node.right, node.op, right=True)
            text = f"{left} {_OPERATORS[type(node.op)]} {right}"
            split = self._input(node.left) if isinstance(node.right, ast.Constant) else None
            if split is not None and split.unit in _SPLIT_UNITS:
                # Without this a reader cannot tell where "× 4" comes from.
                return f"({text} for stock splits)", _ATOMIC
            return text, _PRECEDENCE[type(node.op)]
        raise _Unrenderable(ast.unparse(node))

    def _operand(self, node: ast.expr, parent: ast.operator, *, right: bool) -> str:
        text, precedence = self.render(node)
        # Brackets where reading left to right would change the result: a looser operand,
        # or an equal one on the right of − and /, or on the left of ^ (which groups
        # rightwards).
        outer = _PRECEDENCE[type(parent)]
        if precedence == outer:
            if isinstance(parent, ast.Sub | ast.Div):
                needed = right
            else:
                needed = isinstance(parent, ast.Pow) and not right
        else:
            needed = precedence < outer
        return f"({text})" if needed else text


def arithmetic(fact: Fact) -> str | None:
    """ "gross profit $169.1 billion / revenue $383.3 billion × 100 = 44.1%" for a derived
    fact, or None when it has no formula, or one whose every term is not among its inputs."""
    if not fact.formula or not fact.inputs:
        return None
    tree = _parse_formula(fact.formula)
    if tree is None:
        return None
    try:
        text, _ = _Arithmetic(fact).render(tree)
    except _Unrenderable:
        return None
    # One term (an optional component left out) is the figure itself: "= $9.4 billion"
    # would only repeat it.
    if isinstance(tree, ast.Name | ast.Subscript):
        return text
    return f"{text} = {format_fact_value(fact)}"


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
        worked = arithmetic(fact)
        shown, provenance = format_value(fact.value, fact.unit), _provenance(source)
        stated = format_fact_value(fact)
        if stated != shown:
            # Read from a statement: as people say it, then as the cell writes it.
            where = provenance.strip()[1:-1]
            provenance = f" ({stated} as stated{f', {where}' if where else ''})"
        sentences.append(
            f"{possessive(fact.company)} {mid_sentence(fact.metric_label)} {_when(fact)} was "
            f"{shown}{provenance}{f': {worked}' if worked else ''}."
        )
        if source is not None and source.source_id not in citations:
            citations[source.source_id] = fact_citation(fact, source)
        if fact.differs is not None:
            sentences.append(differs_sentence(fact, by_id, citations))
    sentences.extend(missing_sentences(missing))
    if not sentences:
        sentences.append("No figures were found for this question.")
    return " ".join(sentences), list(citations.values())


def differs_sentence(
    fact: Fact, by_id: dict[str, Source], citations: dict[str, Citation], about: str = ""
) -> str:
    """What the other source gives for a figure two sources disagree on, cited. `about`
    names the figure ("Apple's net income in fiscal 2021") where no sentence before it does,
    as beneath a table."""
    assert fact.differs is not None
    other = fact.differs
    source = by_id.get(other.source_id)
    if source is not None and source.source_id not in citations:
        citations[source.source_id] = fact_citation(fact, source)
    if other.source_id.startswith("doc:"):
        said = (
            f"the filing's own statement gives {format_as_stated(other.value, fact.unit)}"
            f"{_provenance(source)}: the two sources disagree."
        )
    else:
        said = (
            f"SEC's XBRL data gives {format_value(other.value, fact.unit)}"
            f"{_provenance(source)}: the two sources disagree."
        )
    return f"For {about}, {said}" if about else said[0].upper() + said[1:]


def compose_series_answer(
    facts: list[Fact], sources: list[Source], missing: list[str]
) -> tuple[str, list[Citation]]:
    """A range as compact lists: one sentence per company and figure read from filings with
    three or more periods ("Apple's revenue: fiscal 2019 $260.2 billion (ended 2019-09-28),
    …"); derived figures keep a sentence each, since their arithmetic is the point."""
    groups: dict[tuple[str, str, str], list[Fact]] = {}
    for fact in facts:
        groups.setdefault((fact.symbol, fact.metric, fact.period_type), []).append(fact)
    listed = {
        key
        for key, group in groups.items()
        if len(group) >= 3 and all(f.formula is None for f in group) and key[2] != "ttm"
    }
    by_id = {source.source_id: source for source in sources}
    sentences: list[str] = []
    citations: dict[str, Citation] = {}
    rest: list[Fact] = []
    for key, group in groups.items():
        if key not in listed:
            rest.extend(group)
            continue
        group.sort(key=lambda f: (f.fiscal_year, f.fiscal_quarter or 0))
        items = [f"{_when(f).removeprefix('in ')} {format_fact_value(f)}" for f in group]
        first = group[0]
        sentences.append(
            f"{possessive(first.company)} {mid_sentence(first.metric_label)}: {'; '.join(items)}."
        )
        for fact in group:
            source = by_id.get(fact.source_id)
            if source is not None and source.source_id not in citations:
                citations[source.source_id] = fact_citation(fact, source)
    text, more = compose_metric_answer(rest, sources, missing) if rest or missing else ("", [])
    for citation in more:
        citations.setdefault(citation.source_id, citation)
    return " ".join(part for part in (*sentences, text) if part), list(citations.values())


def source_citation(source: Source) -> Citation:
    return Citation(
        source_id=source.source_id,
        label=source.label,
        form=source.form,
        accession=source.accession,
        url=source.url,
        page=source.page,
    )


def missing_sentences(missing: list[str], noun: str = "No figure is") -> list[str]:
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
    sentences.extend(missing_sentences(missing, "No data is"))
    if not sentences:
        sentences.append("No prices were found for this question.")
    return " ".join(sentences), [source_citation(source) for source in sources]


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
    sentences.extend(missing_sentences(missing, "No data is"))
    if not sentences:
        sentences.append("No filings were found for this question.")
    return " ".join(sentences), [source_citation(source) for source in sources]
