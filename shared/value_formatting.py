"""How finq writes a value in its unit: "$383.3 billion", "$6.13", "44.1%", "15,550,061,000
shares". The answerer writes answers with it and the validator patches a wrong figure with
it, so both show a value the same way.

Every figure keeps enough digits that its rounding stays well inside the validator's 2%
cap (see `_ROUNDING_BUDGET`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.contracts.tool_results import Fact

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


def _scaled(value: float, currency: str) -> str:
    magnitude = abs(value)
    for threshold, divisor, word in _MONEY_SCALES:
        if magnitude >= threshold:
            return _signed(value, f"{currency}{_fixed(magnitude / divisor, 1)} {word}")
    return _signed(value, f"{currency}{_fixed(magnitude, 0)}")


def money_scale(largest: float) -> tuple[float, str] | None:
    """The scale ("billion", with its divisor) an amount this large is written in; None
    below a million, where amounts are written in whole dollars."""
    for threshold, divisor, word in _MONEY_SCALES:
        if abs(largest) >= threshold:
            return divisor, word
    return None


def format_money_in(value: float, scale: tuple[float, str] | None) -> str:
    """An amount in a given scale, however small beside it: "$0.95 billion" in a column of
    billions, so a column of figures keeps one scale. Decimals are added as the rounding
    budget needs them, as for any figure."""
    if scale is None:
        return _signed(value, f"${_fixed(abs(value), 0)}")
    divisor, word = scale
    return _signed(value, f"${_fixed(abs(value) / divisor, 1)} {word}")


def format_in_words(value: float) -> str:
    """A bare count in words: "15.9 billion" (a share count inside arithmetic)."""
    return _scaled(value, "")


def format_money(value: float) -> str:
    """USD: "$383.3 billion", "$1.2 trillion", "$950.2 million", "$12,345", "-$1.2 billion"."""
    return _scaled(value, "$")


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


def format_as_stated(value: float, unit: str) -> str:
    """A figure read from a filing's statement, as the statement writes it, in its scale:
    "$16,047 million" for a cell of a table in millions, "$23.01" per share; a figure that
    is no whole number of thousands is written as any other."""
    whole = round(value)
    if unit != "USD" or abs(value - whole) > 1e-6 or abs(whole) < 1_000:
        return format_value(value, unit)
    for divisor, word in ((1_000_000, "million"), (1_000, "thousand")):
        if whole % divisor == 0:
            return _signed(value, f"${abs(whole) // divisor:,} {word}")
    return format_value(value, unit)


# A fact read from a cell of a filing's own statement is cited by that page: "doc:<id>:p<n>".
_STATEMENT_SOURCE = "doc:"


def read_from_statement(fact: Fact) -> bool:
    """Whether a fact is a cell of a filing's statement, as opposed to an XBRL figure or one
    finq computed."""
    return fact.formula is None and fact.source_id.startswith(_STATEMENT_SOURCE)


def format_fact_value(fact: Fact) -> str:
    """A fact's value: as its statement writes it when read from one (a reader checks it
    against the cited page), else in finq's own way."""
    if read_from_statement(fact):
        return format_as_stated(fact.value, fact.unit)
    if fact.formula and fact.inputs and all(i.page is not None for i in fact.inputs):
        # Computed from statement cells: also in their scale, the number a reader holding
        # the filing adds up ("$65.1 billion, or $65,149 million").
        return _in_both_scales(fact.value, fact.unit)
    return format_value(fact.value, fact.unit)


def _in_both_scales(value: float, unit: str) -> str:
    # Not in brackets: a bracketed amount reads as a negative one in a filing.
    said, stated = format_value(value, unit), format_as_stated(value, unit)
    return said if stated == said else f"{said}, or {stated}"


def format_computed_value(value: float, unit: str, inputs: list[Fact]) -> str:
    """A figure computed from others: in finq's way, and also in the statement's scale when
    every input is a statement's cell ("$22.4 billion, or $22,396 million"), so a reader
    holding the filing sees the number its lines add up to."""
    if inputs and all(read_from_statement(f) for f in inputs):
        return _in_both_scales(value, unit)
    return format_value(value, unit)
