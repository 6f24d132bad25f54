"""How questions ask about a filing, and how filings word and lay out what answers them.

Shared by the search (which lifts the table that holds a figure asked for) and the passage
answerer (which picks the sentence or table row to quote):

- a question's content words (compared by their first letters, so "risks" meets "risk"), the
  fiscal years it names and the kind of answer it wants (a figure, a date, a place);
- `FILING_WORDINGS`: the usual ways filings word the common asks ("How many people…" is
  answered by "…full-time equivalent employees"), as data in one place;
- markdown tables as the document parsers write them (`[TABLE n]`, a header row, a rule,
  rows; a row with a label and no values heads the rows under it: "Greater China:").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

STEM = 5  # words are compared by their first letters: "suppliers" ~ "supplier"

_WORD_RE = re.compile(r"[a-z0-9]+")
_FY_WORD_RE = re.compile(r"fy'?(?:\d{2}|\d{4})")
_YEAR_RE = re.compile(r"(?<![\d,.$])(?:19|20)\d\d(?!\d|,\d)")
_FY_RE = re.compile(r"\bfy ?'?(\d\d)\b", re.IGNORECASE)

# Words that carry no topic in a question about a filing: question filler, and the words
# that name the document or the period rather than what is asked.
# How the answer is to be given ("give both figures", "2024 vs 2023"), never what it is about.
REQUEST_WORDS = frozenset({
    "give", "provide", "please", "show", "list", "both", "figures", "numbers", "amounts",
    "vs", "versus",
        # How the figure is sourced ("as reported", "as stated"), not what it is.
    "reported", "stated",
    # How a figure came about ("the revenue LinkedIn brought", "the margin it generated"):
    # no row says it, and "generate" would match "General and administrative".
    "generate", "generated", "generates", "generating", "bring", "brings", "brought",
    "post", "posted", "book", "booked", "spend", "spent",
    # A period's end is read apart, like its year ("the twelve months ended June 30").
    "ended", "ending", "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december",
    # Which of two is the larger is asked of the figures; no row or sentence names it
    # ("greater" stays: "Greater China" is a name).
    "more", "less", "fewer", "higher", "lower", "larger", "smaller", "bigger",
})  # fmt: skip
STOP_WORDS = frozenset({
    "the", "a", "an", "of", "in", "on", "for", "to", "and", "or", "is", "are", "was", "were",
    "be", "been", "by", "as", "at", "it", "its", "with", "from", "that", "this", "these",
    "those", "what", "which", "who", "how", "did", "does", "do", "say", "said", "about", "their",
    "there", "has", "have", "had", "will", "would", "can", "could", "any", "all", "our", "we",
    "us", "they", "them", "than", "then", "into", "over", "under", "per", "also", "company",
    "companys", "when", "where", "why", "much", "many", "according", "fiscal", "year", "years",
    "annual", "quarterly", "report", "filing", "filed", "form", "10", "k", "q", "s", "end",
    "tell", "me", "number", "amount", "get", "got",
    # Hedges say how exact the answer may be, not what it is about.
    "approximately", "roughly", "around", "nearly", "circa",
}) | REQUEST_WORDS  # fmt: skip

Ask = Literal["figure", "count", "date", "place", "name"]

# What kind of answer a question wants, by how it asks.
_ASKS: dict[Ask, re.Pattern[str]] = {
    "figure": re.compile(
        r"\b(?:how (?:many|much|large|big)|number of|by how much|what amount|to what amount|"
        r"what (?:was|were|is|are) (?:the )?(?:\w+'s )?(?:\w+ ){0,4}(?:sales|revenues?|income|"
        r"rate|backlog|expenditures?|dividend|margin|assets|liabilities|earnings|cash|"
        r"expenses?|growth|change|costs?)|"
        r"how did .{0,80}\b(?:change|grow|increase|decrease|decline|rise|fall)|"
        r"how much did .{0,80}\b(?:change|grow|increase|decrease|decline|rise|fall))\b",
        re.IGNORECASE,
    ),
    # "How many stores": a count, which filings write as a bare number ("463 retail stores").
    "count": re.compile(r"\b(?:how many|number of|headcount)\b", re.IGNORECASE),
    "date": re.compile(
        r"\b(?:when|what date|which date|since when|how long|what day|(?:in|since) (?:which|what) "
        r"year|what year)\b",
        re.IGNORECASE,
    ),
    # Who, or which firm, exchange or company: a proper name.
    "name": re.compile(
        r"\b(?:who|whom|whose|name of|what is the name|(?:which|what) (?:\w+ ){0,2}(?:firm|"
        r"auditor|exchange|bank|company|companies|subsidiary|acquirer|executive|officer|"
        r"trustee|agent|product|brand|platform|chip|architecture|city))\b",
        re.IGNORECASE,
    ),
    "place": re.compile(
        r"\b(?:where|which (?:countries|country|regions?|locations?)|located)\b", re.IGNORECASE
    ),
}
# Words that name a measured figure: a question naming one ("Greater China net sales 2024")
# wants the figure even when it does not say "how much".
_MEASURE_RE = re.compile(
    r"\b(?:net sales|revenues?|operating income|net income|income|expenses?|margin|"
    r"backlog|capital expenditures|cash flows?|eps|earnings per share|tax rate|dividends?|"
    r"headcount|employees|sales|units?|loss(?:es)?|profit|"
    # An answer asked in a scale is an amount: "in thousands", "(in $M)".
    r"in (?:thousands|millions|billions)|in \$ ?(?:m|mm|b|bn|k|millions|billions))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Wording:
    """One common ask (`asks`, matched against the question) and how filings word what
    answers it: `answers` are phrases (lower case) of the sentence or row that answers,
    `also` phrases of sentences near the answer. The question's own words for the ask are
    stood in for by these phrases: a question naming the critical audit matter is answered by
    "Description of the Matter…", not by the sentence that repeats "critical audit matter"."""

    asks: re.Pattern[str]
    answers: tuple[str, ...]
    also: tuple[str, ...] = ()


def _wording(asks: str, answers: tuple[str, ...], also: tuple[str, ...] = ()) -> Wording:
    return Wording(re.compile(asks, re.IGNORECASE), answers, also)


FILING_WORDINGS: tuple[Wording, ...] = (
    _wording(
        r"\b(?:employees?|employ(?:s|ed)?|headcount|workforce|staff|people|personnel)\b",
        ("full-time equivalent employees", "employees"),
    ),
    _wording(
        r"\b(?:(?:share|stock)?holders? of record|record holders?|registered holders?)\b",
        ("shareholders of record", "stockholders of record", "holders of record"),
    ),
    _wording(
        r"\b(?:buy ?backs?|repurchas\w*|authori[sz]\w*)\b",
        (
            "repurchase program",
            "authorized to purchase",
            "program authorization",
            "repurchase authorization",
        ),
        ("authorized", "repurchase"),
    ),
    _wording(r"\bbacklog\b", ("revenue backlog", "remaining performance obligations")),
    # A hedged count or amount ("roughly how many…") is hedged in filings' own word.
    _wording(r"\b(?:roughly|approx\.?|around how|about how|nearly)\b", ("approximately",)),
    _wording(
        r"\bcritical audit matters?\b",
        ("description of the matter",),
        ("critical audit matter",),
    ),
    _wording(
        r"\b(?:manufactur\w*|assembl\w*|made|produced|production)\b",
        ("manufacturing is performed", "manufactured by"),
        ("located primarily in", "outsourcing partners"),
    ),
    _wording(
        r"\b(?:lawsuits?|sued?|suits?|litigation|complaint|antitrust)\b",
        ("filed a lawsuit", "filed a civil", "filed a complaint", "filed suit"),
        ("lawsuit",),
    ),
    _wording(r"\bsettle\w*", ("reached a settlement", "settlement agreement"), ("settlement",)),
    _wording(r"\b(?:rul(?:e|ed|ing)|verdict)\b", ("ruled", "verdict", "ruling"), ("decision",)),
    _wording(
        r"\b(?:since when|how long|how many years)\b.*\bauditor\b|\bauditor since\b",
        ("auditor since", "served as"),
    ),
    # Who audits the company: its auditor signs the report ("/s/ … LLP") beside the sentence
    # that says since when it has served. (A critical audit matter is another ask.)
    _wording(
        r"\b(?:auditors?|audit(?:s|ed)|accounting firm|accountants)\b",
        ("auditor since",),
        ("llp", "registered public accounting firm", "served as"),
    ),
    _wording(r"\bdividends?\b", ("quarterly cash dividend", "cash dividend"), ("per share",)),
    _wording(r"\b(?:capex|capital (?:expenditures?|spending))\b", ("capital expenditures",)),
    _wording(r"\btax rate\b", ("effective tax rate",)),
    _wording(
        r"\b(?:grow(?:th|n)?|grew|rise|rose|increase\w*|decline\w*|change)\b",
        (),
        ("change", "increased", "decreased"),
    ),
)


# Irregular forms filings and questions use of the same verbs: "revenue grew" answers
# "how much did revenue grow".
_IRREGULAR = {"grew": "grow", "grown": "grow", "rose": "rise", "risen": "rise", "fell": "fall",
              "fallen": "fall", "sold": "sell", "spent": "spend", "paid": "pay", "made": "make",
              "bought": "buy"}  # fmt: skip


def stem(word: str) -> str:
    """A word's first letters after its inflection: "ruled", "rules" and "ruling" are all
    "rul"; "employees" and "employ" are "emplo"; "grew" is "grow"."""
    word = _IRREGULAR.get(word, word)
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("es") and word[-3:-2] in {"s", "x", "z", "h"} and len(word) > 4:
        word = word[:-2]
    elif word.endswith("s") and word[-2:-1] not in {"s", "u", "i"} and len(word) > 3:
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word[:STEM]


def words(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower().replace("\u2019", "'").replace("'s", ""))


def terms(text: str, ignore: Iterable[str] = ()) -> set[str]:
    """The text's content words by their first letters, without stop words, years (the
    period is read apart, by `asked_years`) and the words in `ignore` (a company's name)."""
    skipped = {stem(w) for w in ignore}
    return {
        stem(w)
        for w in words(text)
        if w not in STOP_WORDS
        and len(w) > 1
        and not _YEAR_RE.fullmatch(w)
        and not (w.isdigit() and len(w) <= 2)  # a day of a month, a note's number
        and not _FY_WORD_RE.fullmatch(w)  # "FY2016", "fy16": a period, read apart
    } - skipped


def asked_years(question: str) -> list[int]:
    """The years a question names, in its order: "fiscal 2024", "FY24", "2019 through 2021"."""
    found = [int(m.group()) for m in _YEAR_RE.finditer(question)]
    found += [2000 + int(m.group(1)) for m in _FY_RE.finditer(question)]
    return list(dict.fromkeys(found))


def asks(question: str) -> set[Ask]:
    """The kinds of answer the question wants."""
    kinds = {kind for kind, pattern in _ASKS.items() if pattern.search(question)}
    if "date" not in kinds and _MEASURE_RE.search(question):
        kinds.add("figure")
    return kinds


def asked_wordings(question: str) -> list[Wording]:
    """The common asks the question makes, in `FILING_WORDINGS` order."""
    return [w for w in FILING_WORDINGS if w.asks.search(question)]


def filing_phrases(question: str) -> list[str]:
    """How filings word what the question asks, the answering phrases first, no repeats."""
    wordings = asked_wordings(question)
    phrases = [say for w in wordings for say in w.answers] + [
        say for w in wordings for say in w.also
    ]
    return list(dict.fromkeys(phrases))


def ask_words(question: str) -> set[str]:
    """The question's words (as `terms`) that make one of the common asks: its filing
    wordings stand in for them."""
    found: set[str] = set()
    for wording in asked_wordings(question):
        for match in wording.asks.finditer(question):
            found |= terms(match.group())
    return found


def plain(text: str) -> str:
    """Lower case with straight quotes and single spaces, for phrase matching."""
    text = text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    return " ".join(text.lower().split())


# A figure as filings write it: money, a count with thousands, a decimal, a percentage.
_FIGURE_RE = re.compile(
    r"\$\s?\d|\d,\d{3}|\b\d+\.\d+\b|\d\s?%|\(\d+\)\s?%|\b\d+ (?:million|billion|thousand)\b"
)
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DATE_RE = re.compile(
    rf"\b(?:(?:{_MONTHS}) \d{{1,2}}, (?:19|20)\d\d|(?:in|since|during) (?:(?:{_MONTHS}) )?"
    r"(?:19|20)\d\d)\b",
    re.IGNORECASE,
)


def has_figure(text: str) -> bool:
    return _FIGURE_RE.search(text) is not None


# An amount as filings write it: money, a grouped count, a decimal, a scaled number; not a
# percentage.
_AMOUNT_RE = re.compile(
    r"\$\s?\d|\d,\d{3}(?![\d.]*\s?%)|\b\d+\.\d+\b(?!\s?%)"
    # "750 million members" counts people, not money.
    r"|\b\d+ (?:million|billion|thousand)\b(?!\s+(?:members|users|customers|people|employees"
    r"|subscribers|accounts|devices|units|shares|square))"
)
# A question that asks for a share, a rate or a percentage, which a percentage answers.
_PERCENT_ASKED_RE = re.compile(
    r"%|\bpercent|\bshare of\b|\brate\b|\bmargin|\bratio\b|\bproportion|\bfraction|\bgr[eo]w",
    re.IGNORECASE,
)


def has_answering_figure(text: str, question: str) -> bool:
    """Whether `text` holds a figure of the kind `question` asks: any figure when it asks for
    a share, a rate or a growth; an amount otherwise ("how much revenue" is not answered by
    "more than 10% of revenue")."""
    if _PERCENT_ASKED_RE.search(question):
        return has_figure(text)
    return _AMOUNT_RE.search(text) is not None


# A whole number as filings write a count: "463", "23,502"; not a year or a day of a date.
# A number joined to a word by a hyphen ("2-day", "10-K", "52-week") names a kind, not a
# count.
_COUNT_RE = re.compile(r"(?<![\d,.$-])\d{1,3}(?:,\d{3})*(?![\d.-]|,\d|\s?%)")
_MONTH_BEFORE_RE = re.compile(rf"\b(?:{_MONTHS})\s+$", re.IGNORECASE)
# A word that labels the number after it: "Note 15", "Item 7", "Rule 10b5-1", "Level 2".
_LABEL_BEFORE_RE = re.compile(
    r"\b(?:note|item|rule|section|part|level|page|exhibit|schedule|article|chapter|step|tier"
    r"|class|phase|form|no\.?|number)\s+$",
    re.IGNORECASE,
)


def counts_in(text: str) -> list[re.Match[str]]:
    """The whole numbers of a text that may count something: neither a year nor a day."""
    return [
        match
        for match in _COUNT_RE.finditer(text)
        if not _YEAR_RE.fullmatch(match.group())
        and not _MONTH_BEFORE_RE.search(text[max(0, match.start() - 12) : match.start()])
        and not _LABEL_BEFORE_RE.search(text[max(0, match.start() - 12) : match.start()])
    ]


def has_count(text: str) -> bool:
    return bool(counts_in(text))


def has_date(text: str) -> bool:
    return _DATE_RE.search(text) is not None


def idf(units: list[set[str]]) -> dict[str, float]:
    """Weight of each term over the units (sentences, rows) it appears in: a word every
    unit has ("company") says little about which one answers."""
    count = len(units) or 1
    seen: dict[str, int] = {}
    for unit in units:
        for term in unit:
            seen[term] = seen.get(term, 0) + 1
    return {term: 1.0 + math.log(count / n) for term, n in seen.items()}


# --- tables ----------------------------------------------------------------------------------

_TABLE_MARK_RE = re.compile(r"^\[(?:TABLE \d+|END TABLE)\]$")
_RULE_CELL_RE = re.compile(r"^:?-{3,}:?$")
_FOOTNOTE_RE = re.compile(r"\s*(?:\(\d\)|\(\w\))+\s*$")
_NUMERIC_CELL_RE = re.compile(r"^[$(]*\s*[-—–]?[\d,.]+\s*[)%]*\s*%?$|^[-—–]+\s*%?$")


@dataclass(frozen=True, slots=True)
class TableRow:
    line: str  # the row as the passage writes it
    cells: tuple[str, ...]
    group: TableRow | None  # the row without values that heads this one ("Americas:")

    @property
    def label(self) -> str:
        """The row's name without its footnote marks: "Services (1)" → "Services"."""
        return _FOOTNOTE_RE.sub("", self.cells[0]).rstrip(":").strip() if self.cells else ""

    @property
    def values(self) -> tuple[str, ...]:
        return self.cells[1:]

    @property
    def heads_a_group(self) -> bool:
        return bool(self.label) and not any(self.values)

    @property
    def numeric(self) -> bool:
        """Every value it has is a figure ("$201,183", "(8)%", "—%")."""
        filled = [v for v in self.values if v]
        return bool(filled) and all(_NUMERIC_CELL_RE.match(v) for v in filled)


@dataclass(frozen=True, slots=True)
class MarkdownTable:
    header: TableRow | None
    rule: str | None  # the "| --- | --- |" line under the header
    rows: tuple[TableRow, ...]

    @property
    def header_lines(self) -> list[str]:
        return [line for line in (self.header.line if self.header else None, self.rule) if line]


def _cells(line: str) -> tuple[str, ...]:
    return tuple(cell.strip() for cell in line.strip().strip("|").split("|"))


def parse_table(text: str) -> MarkdownTable | None:
    """A passage's markdown table: its header, rule and rows, each row with the group row
    above it. None when the text holds no table rows."""
    lines = [
        line.rstrip()
        for line in text.splitlines()
        if line.strip().startswith("|") and not _TABLE_MARK_RE.match(line.strip())
    ]
    if not lines:
        return None
    header: TableRow | None = None
    rule: str | None = None
    body = lines
    if len(lines) > 1 and all(_RULE_CELL_RE.match(c) for c in _cells(lines[1]) if c):
        header = TableRow(lines[0], _cells(lines[0]), None)
        rule = lines[1]
        body = lines[2:]
    rows: list[TableRow] = []
    group: TableRow | None = None
    for line in body:
        row = TableRow(line, _cells(line), group)
        if row.heads_a_group:
            group = row
        rows.append(row)
    return MarkdownTable(header, rule, tuple(rows))


def period_columns(header: TableRow | None, years: Iterable[int]) -> list[int]:
    """The index (among a row's values) of the first column whose header names each year, in
    the years' order; years the header does not name are left out."""
    if header is None:
        return []
    columns: list[int] = []
    for year in years:
        for index, cell in enumerate(header.values):
            if re.search(rf"(?<!\d){year}(?!\d)", cell):
                if index not in columns:
                    columns.append(index)
                break
    return columns


def period_column(header: TableRow | None, years: Iterable[int]) -> int | None:
    """The index of the first column whose header names one of the years, the first year
    asked first; None when the header names none of them."""
    columns = period_columns(header, years)
    return columns[0] if columns else None


def column_year(header: TableRow | None, column: int) -> int | None:
    """The year a column's header names ("Year Ended December 31, 2019": 2019)."""
    if header is None or column >= len(header.values):
        return None
    found = _YEAR_RE.findall(header.values[column])
    return int(found[-1]) if len(found) == 1 else None


def header_names_years(header: TableRow | None) -> bool:
    return header is not None and any(_YEAR_RE.search(cell) for cell in header.values)
