"""The figures an answer's text states, for `finq eval`: a figure counts only when the answer
says it, since a fetched fact the text never states (or states wrong) answers nothing.

finq writes values as `shared.value_formatting` does ("$383.3 billion", "$6.13", "44.1%",
"1.5×", "15,550,061,000 shares", "45.3 days", "-$1.2 billion"), and a model may write them
its own way ("$383.3B", "383,285 million", "46.2 percent", "1.5x", "$(1.2) billion", "fell by
$1.2 billion"). Each number is read with its sign, its scale and the unit of its last shown
digit, and it states an expected value when the two are within half that unit: what rounding
the value to the digits shown gives, whichever way a tie is broken. So "$383.3 billion"
states 383,285,000,000, and neither "$383.2 billion" nor "$383.3 million" does.

A bare integer is never a figure: it is a year ("fiscal 2023"), a date's day, a quarter or
form number ("Q4", "10-K") or a citation mark ("[2]"), and a figure written without a unit or
a scale cannot be told from those.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

Kind = Literal["money", "percent", "multiple", "shares", "days"]

# The kind of number a value in each catalog unit (shared.metric_catalog.UNITS) is written as.
KIND_OF_UNIT: dict[str, Kind] = {
    "USD": "money",
    "USD/share": "money",
    "%": "percent",
    "x": "multiple",
    "shares": "shares",
    "days": "days",
}

_SCALES: dict[str, Decimal] = {
    "thousand": Decimal(10) ** 3,
    "k": Decimal(10) ** 3,
    "million": Decimal(10) ** 6,
    "mn": Decimal(10) ** 6,
    "mm": Decimal(10) ** 6,
    "m": Decimal(10) ** 6,
    "billion": Decimal(10) ** 9,
    "bn": Decimal(10) ** 9,
    "b": Decimal(10) ** 9,
    "trillion": Decimal(10) ** 12,
    "tn": Decimal(10) ** 12,
    "t": Decimal(10) ** 12,
}

# The digits: grouped by thousands ("383,285") or not, with any decimals.
_DIGITS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")

# What may stand just before the digits, read back from them (the pattern ends at \Z): a
# fall ("fell by", "a decline of") or a minus makes the number negative, as does an
# accounting bracket closed right after the digits ("(1.2)", "$(1.2) billion"). A minus
# must not follow a letter or digit, where "-" is a hyphen ("10-K", "2023-09-30"), and the
# answerer's subtraction ("… − cost of revenue $214.1 billion") has a space after its "−".
_BEFORE = re.compile(
    r"(?P<fall>\b(?:fell|declined|decreased|dropped|shrank|down)(?:\s+by)?\s+"
    r"|\b(?:decrease|decline|drop|fall|reduction)\s+of\s+"
    r"|\bnegative\s+)?"
    r"(?P<sign>(?<![\w.])[-−+])?"
    r"(?P<currency>\bUS\$|(?<!\w)\$|\bUSD\s?)?"
    r"(?P<inner_sign>[-−])?"
    r"(?P<bracket>\()?\Z",
    re.IGNORECASE,
)

# What may follow the digits: the bracket's close, a scale, then the unit. A one-letter
# scale and "x" stick to the number ("$383.3B", "1.5x"): spaced, they are a word or the
# answerer's multiplication ("$383.3 billion × 100").
_AFTER = re.compile(
    r"(?P<close>\))?"
    r"(?:\s?(?P<scale_word>thousand|million|billion|trillion|tn|bn|mn|mm)\b"
    r"|(?P<scale_abbreviation>[kmbt])(?!\w))?"
    r"(?:(?P<percent>\s?%|\s?(?:percent(?:age\s+points?)?|per\s+cent|pp)\b)"
    r"|(?P<multiple>[x×](?!\w)|\s?times\b)"
    r"|(?P<shares>\s+shares\b)"
    r"|(?P<days>\s+days\b))?"
    r"(?P<currency>\s+(?:dollars|USD)\b)?",
    re.IGNORECASE,
)

# Digits that run on into a word or another number ("10th", "1.2.3", "2023a") are not a
# figure; nor are digits inside a word ("FY2023", "Q4") or after a decimal point or comma.
_RUNS_ON = re.compile(r"\w|[.,]\d")
_INSIDE = re.compile(r"[\w.,]")
# How far back a prefix ("a reduction of US$") can reach.
_LOOK_BACK = 40


@dataclass(frozen=True)
class StatedNumber:
    """A number as the text states it: "$383.3 billion" is 383.3e9, shown to 0.1e9."""

    text: str
    value: Decimal
    step: Decimal  # the unit of the last digit shown, scaled: 0.1e9 for "$383.3 billion"
    kind: Kind | None  # None when the text gives a scale or decimals but no unit

    def states(self, expected: float, unit: str | None = None) -> bool:
        """Whether this is `expected` (in `unit`, when known) to the precision shown.

        Within half a unit of the last shown digit, which is what rounding gives whichever
        way a tie is broken: 1.25 may be shown as "1.2" or "1.3", never as "1.1"."""
        wanted = KIND_OF_UNIT.get(unit) if unit else None
        if wanted is not None and self.kind is not None and self.kind != wanted:
            return False
        # repr() is the float's shortest exact-enough decimal, so 0.3 stays 0.3.
        return abs(Decimal(repr(float(expected))) - self.value) <= self.step / 2


def _kind(after: re.Match[str], currency: bool) -> Kind | None:
    if after["percent"]:
        return "percent"
    if after["multiple"]:
        return "multiple"
    if after["shares"]:
        return "shares"
    if after["days"]:
        return "days"
    return "money" if currency else None


def stated_numbers(text: str) -> list[StatedNumber]:
    """Every figure `text` states, in order."""
    numbers: list[StatedNumber] = []
    for digits in _DIGITS.finditer(text):
        start, end = digits.span()
        # Every group of both patterns is optional, so each matches (perhaps empty).
        before = _BEFORE.search(text, max(0, start - _LOOK_BACK), start)
        after = _AFTER.match(text, end)
        assert before is not None and after is not None
        if not before.group(0) and start > 0 and _INSIDE.match(text, start - 1):
            continue
        if _RUNS_ON.match(text, after.end()):
            continue
        written = digits.group(0)
        scale_name = after["scale_word"] or after["scale_abbreviation"]
        kind = _kind(after, currency=bool(before["currency"] or after["currency"]))
        if kind is None and scale_name is None and not re.search(r"[.,]", written):
            continue  # a bare integer: a year, a day, a quarter or a citation mark
        # An accounting bracket closes on the digits; "(383.3 billion)" is an aside.
        bracketed = bool(before["bracket"] and after["close"])
        minus = before["sign"] in {"-", "−"} or bool(before["inner_sign"])
        negative = bool(before["fall"]) or minus or bracketed
        shown = written.replace(",", "")
        scale = _SCALES[scale_name.lower()] if scale_name else Decimal(1)
        mantissa = Decimal(shown)
        numbers.append(
            StatedNumber(
                text=text[before.start() : after.end()].strip(),
                value=(-mantissa if negative else mantissa) * scale,
                step=Decimal(10) ** -len(shown.partition(".")[2]) * scale,
                kind=kind,
            )
        )
    return numbers


def shown_text(body: Mapping[str, Any]) -> str:
    """What an answer (a response body of POST /v1/ask) shows the user in words and figures:
    its text, then its table, caption and headers and each row a line of its own ("FY2023:
    $27.0 billion; 0.223%"). A figure in the table is stated as much as one in the prose.
    The workings are not: they show how a figure was reached, behind a disclosure, and a
    figure that appears only as another's input does not answer the question."""
    lines = [str(body.get("answer") or "")]
    table = body.get("table") or {}
    if table:
        lines.append(str(table.get("caption") or ""))
        lines.append("; ".join(str(column) for column in table.get("columns") or []))
        for row in table.get("rows") or []:
            cells = "; ".join(str(cell) for cell in row.get("cells") or [] if cell is not None)
            lines.append(f"{row.get('label', '')}: {cells}")
    return "\n".join(lines)


def states(text: str, expected: float, unit: str | None = None) -> bool:
    """Whether `text` states `expected` (in `unit`, when known) anywhere."""
    return any(number.states(expected, unit) for number in stated_numbers(text))
