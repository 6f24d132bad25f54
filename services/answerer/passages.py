"""Answers from document passages (deterministic mode): the sentence or table row that
answers the question, quoted word for word from the passages search found, each with a
numbered citation `[n]` tied to its document and page.

Every sentence of prose and every row of a table, across all the passages returned, is a
candidate. Each is scored by the question's content words it holds (weighted by how rare they
are among the candidates), by how filings word the ask (`shared.filing_text.FILING_WORDINGS`:
"how many people" is answered by "...full-time equivalent employees"), by whether it holds
what kind of answer is asked (a figure for "how many/how much/what was", a date for "when"),
and a little by the search's own rank. A table row is named by its label and the group row
above it ("Greater China:" / "Operating income"), and its figure is read from the column of
the period asked. The best two or three are quoted, the best first.

Quoting, not paraphrasing, is what lets the validator hold such an answer to the passages:
every number it shows stands in a passage.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from services.answerer.formatting import source_citation
from shared.answer_spans import SENTENCE_END, TOPIC_SHARE, answer_span, lead_kinds
from shared.change_words import GROWTH, Direction, yes_no_direction
from shared.contracts.answers import Citation
from shared.contracts.tool_results import Passage, Source
from shared.english import possessive
from shared.filing_text import (
    MarkdownTable,
    TableRow,
    ask_words,
    asked_wordings,
    asked_years,
    asks,
    column_year,
    has_answering_figure,
    has_count,
    has_date,
    header_names_years,
    idf,
    parse_table,
    period_columns,
    plain,
    terms,
    words,
)
from shared.tools import SearchDocumentsArgs, ToolArguments

# Sentences end at terminal punctuation before a capital, a quote or a bracket; "U.S." and
# "Inc." stay inside one, and decimals never break (no space after the point).
# A point that ends an abbreviation, not a sentence: "U.S. Department", "Apple Inc. filed".
_ABBREVIATION_RE = re.compile(r"(?:\b[A-Z]\.){1,3}$|\b(?:Inc|Corp|Co|Ltd|No|Nos|Mr|Ms|Dr|St|vs)\.$")
_TERMINAL_RE = re.compile(r"[.!?:;)\"”]$")
_PARAGRAPH_RE = re.compile(r"\n\s*\n")
_HEADING_LINE_RE = re.compile(r"^\s*(?:#{1,6}\s|(?:Item|ITEM|Part|PART)\s+[0-9IVX]+[A-Z]?\.?\s)")
_TABLE_MARK_RE = re.compile(r"^\[(?:TABLE \d+|END TABLE)\]$")
_DIGITS_RE = re.compile(r"\d[\d,]*(?:\.\d+)?")
_WHOLE_NUMBER_RE = re.compile(r"(?<![\d,.])\d[\d,]*(?:\.\d+)?(?<=\d)")

MAX_QUOTES = 3
MAX_QUOTE_CHARS = 450  # a sentence and the ones after it in its paragraph, while they fit
MIN_SENTENCE_CHARS = 20
MAX_SENTENCE_CHARS = 900  # past this a quote is cut at a word, marked with "…"
# A second or third quote must score this share of the best one: weaker ones are noise.
RUNNER_UP_SHARE = 0.75

# How much each kind of evidence counts, in units of one rare question word.
ANSWER_PHRASE_BONUS = 3.0  # a filing's wording of what answers the ask
NEAR_PHRASE_BONUS = 1.0  # a wording found near the answer, per phrase
PHRASE_BONUS_CAP = 4.0
KIND_BONUS = 2.0  # holds the kind of answer asked: a figure, a date
LACKING_KIND_SHARE = 0.5  # what a sentence without the kind of answer asked keeps
YEAR_BONUS = 0.5  # names the year asked
RANK_PRIOR = 0.5  # the search's best passage, fading to nothing for its last
PARAGRAPH_SHARE = 0.5  # question words elsewhere in a sentence's paragraph
CONTEXT_SHARE = 0.5  # question words in a table's heading or header, not its row
UNASKED_LABEL_SHARE = 1.0  # a row label's words the question does not name ("Total …")
MISSING_PERIOD_PENALTY = 2.0  # a table by period that lacks the period asked
BOTH_PERIODS_BONUS = 2.0  # a row holding both periods a comparison asks of it
UNNAMED_SHARE = 0.5  # question words neither a row nor its table names


@dataclass(slots=True)
class _Question:
    text: str
    terms: set[str]  # its topic words, without those the filing wordings stand in for
    said: set[str]  # every word it says, and the words of those wordings
    years: list[int]
    changed: bool  # asks how a figure moved between periods ("did it fall", "yoy")
    kinds: set[str]
    answers: list[str]  # phrases of the sentence that answers, as filings write them
    also: list[str]  # phrases near the answer


@dataclass(slots=True)
class _Candidate:
    """A sentence (with the ones after it in its paragraph) or a table row, scored."""

    passage_index: int
    passage: Passage
    terms: set[str]
    text: str  # what is scored
    following: list[str] = field(default_factory=list)  # later sentences of its paragraph
    paragraph: set[str] = field(default_factory=set)  # the words of its whole paragraph
    table: MarkdownTable | None = None
    row: TableRow | None = None
    column: int | None = None  # index of the period's value among the row's values
    # Every period asked that the table has, the first asked first (`column` is the first).
    columns: list[int] = field(default_factory=list)
    score: float = 0.0

    @property
    def is_row(self) -> bool:
        return self.row is not None


def _company_words(passages: list[Passage]) -> set[str]:
    # The search already kept to the company asked about; its name in the question says
    # nothing about which sentence answers, and filings say "the Company" anyway.
    return {w for p in passages for w in words(p.company or "") if w not in {"inc", "corp"}}


def _question(question: str, passages: list[Passage]) -> _Question:
    wordings = asked_wordings(question)
    answers = list(dict.fromkeys(say for w in wordings for say in w.answers))
    also = list(dict.fromkeys(say for w in wordings for say in w.also))
    changed = bool(GROWTH.search(question) or _COMPARED.search(question))
    asked = question
    if changed and "figure" in asks(question):
        # Which way a figure moved is asked of it: a row of figures never says "decreased",
        # and the sentence that does must not outrank the row for that word alone.
        asked = GROWTH.sub(" ", question)
    named = terms(asked, ignore=_company_words(passages))
    return _Question(
        text=question,
        terms=named - ask_words(question),
        said=named | terms(" ".join(answers + also)),
        years=asked_years(question),
        changed=changed,
        kinds=asks(question),
        answers=answers,
        also=also,
    )


def _sentences(block: str) -> list[str]:
    """A paragraph's sentences; a point after an abbreviation ("U.S.") ends none."""
    sentences: list[str] = []
    start = 0
    for boundary in SENTENCE_END.finditer(block):
        if _ABBREVIATION_RE.search(block[start : boundary.start()].rstrip("\"')]”")):
            continue
        sentences.append(block[start : boundary.start()])
        start = boundary.end()
    sentences.append(block[start:])
    return [" ".join(s.split()) for s in sentences]


def _is_heading(block: str) -> bool:
    """A short line with no closing punctuation names a section ("Critical Audit Matter",
    "Apple Inc. | 2024 Form 10-K | 47"): not a sentence to quote."""
    line = " ".join(block.split())
    return len(line) <= 80 and "\n" not in block.strip() and not _TERMINAL_RE.search(line)


def _paragraphs(passage: Passage) -> list[list[str]]:
    """The passage's prose as paragraphs of sentences, headings left out."""
    # Heading lines ("## Withdrawals", "Item 1A. Risk Factors") name a section; they are
    # not sentences to quote, and must not run into the sentence after them.
    lines = [
        line
        for line in passage.text.splitlines()
        if not _HEADING_LINE_RE.match(line) and not _TABLE_MARK_RE.match(line.strip())
    ]
    paragraphs = []
    for block in _PARAGRAPH_RE.split("\n".join(lines)):
        if _is_heading(block):
            continue
        sentences = [s for s in _sentences(block) if len(s) >= MIN_SENTENCE_CHARS]
        if sentences:
            paragraphs.append(sentences)
    return paragraphs


def _candidates(index: int, passage: Passage) -> list[_Candidate]:
    table = parse_table(passage.text) if passage.is_table else None
    if table is None:
        found = []
        for sentences in _paragraphs(passage):
            paragraph = terms(" ".join(sentences))
            for position, sentence in enumerate(sentences):
                if sentence.endswith(":"):
                    # "… by segment is as follows (in millions):" says what the table after
                    # it holds; the table answers, the sentence does not.
                    continue
                following = sentences[position + 1 :]
                found.append(
                    _Candidate(index, passage, terms(sentence), sentence, following, paragraph)
                )
        return found
    found = []
    for row in table.rows:
        if row.heads_a_group or not row.label:
            continue
        if row.numeric:
            named = terms(row.label) | (terms(row.group.label) if row.group else set())
            found.append(_Candidate(index, passage, named, row.line, table=table, row=row))
        else:
            # A row of words (an auditor's "Description of the Matter | …"): read as prose.
            text = " ".join(cell for cell in row.cells if cell)
            found.append(_Candidate(index, passage, terms(text), text, table=table, row=row))
    return found


def _weight(found: set[str], weights: dict[str, float]) -> float:
    return sum(weights.get(term, 1.0) for term in found)


def _phrase_bonus(text: str, q: _Question) -> float:
    """A filing's wording of what answers the ask counts most; wordings near it, less."""
    said = plain(text)
    bonus = ANSWER_PHRASE_BONUS if any(phrase in said for phrase in q.answers) else 0.0
    bonus += NEAR_PHRASE_BONUS * sum(phrase in said for phrase in q.also)
    return min(PHRASE_BONUS_CAP, bonus)


def _score(candidate: _Candidate, q: _Question, weights: dict[str, float], count: int) -> float:
    prior = RANK_PRIOR * (count - candidate.passage_index) / count
    if candidate.row is not None and candidate.row.numeric:
        return _score_row(candidate, candidate.row, q, weights) + prior
    text = candidate.text
    score = _weight(q.terms & candidate.terms, weights) + _phrase_bonus(text, q)
    if score == 0:
        return 0.0
    # A sentence without the kind of answer asked (no date for "when") cannot answer it,
    # however many of the question's words it repeats: it counts for half.
    held = []
    if "count" in q.kinds:
        # "How many" is answered by a count, written bare ("463 retail stores"), not by an
        # amount of money beside the same words.
        held.append(has_count(text))
    elif "figure" in q.kinds:
        held.append(has_answering_figure(text, q.text))
    if "date" in q.kinds:
        held.append(has_date(text))
    score += KIND_BONUS * sum(held)
    if "name" in q.kinds and answer_span(text, "name", q.said, set()) is not None:
        score += KIND_BONUS
    # The subject is often named once for a paragraph ("Harbor Freight Lines filed a
    # lawsuit… On March 3 the court ruled…"): its other sentences' words count for less.
    score += PARAGRAPH_SHARE * _weight((q.terms & candidate.paragraph) - candidate.terms, weights)
    if any(str(year) in text for year in q.years):
        score += YEAR_BONUS
    if candidate.table is not None and candidate.table.header is not None:
        # A row of words is quoted under its header, which may name what was asked.
        header = terms(candidate.table.header.line) - candidate.terms
        score += CONTEXT_SHARE * _weight(q.terms & header, weights)
    if not all(held):
        score *= LACKING_KIND_SHARE
    return score + prior


def _table_context(passage: Passage, table: MarkdownTable) -> set[str]:
    """What a table is about: its section heading, the sentence introducing it, its header
    and row names ("Total net sales" says the rows above it are net sales)."""
    labels = [row.label for row in table.rows]
    about = [passage.heading or "", passage.caption or "", *table.header_lines, *labels]
    return terms(" ".join(about))


def _score_row(c: _Candidate, row: TableRow, q: _Question, weights: dict[str, float]) -> float:
    """A row of figures answers when the question names its label (and its group's), and
    its table has the period asked."""
    group = row.group.label if row.group else ""
    named = q.terms & c.terms
    phrases = _phrase_bonus(f"{group} {row.label}", q)
    if not named and not phrases:
        return 0.0
    assert c.table is not None
    score = _weight(named, weights) + phrases
    context = _table_context(c.passage, c.table) - c.terms
    score += CONTEXT_SHARE * _weight(q.terms & context, weights)
    # A thing asked that neither the row nor its table names ("iPhone" of the iPad table's
    # "Unit sales") says the row is another's.
    score -= UNNAMED_SHARE * _weight(q.terms - c.terms - context, weights)
    score -= UNASKED_LABEL_SHARE * _weight(terms(row.label) - q.said, weights)
    columns = period_columns(c.table.header, q.years)
    if q.changed and len(columns) == 1 and q.years:
        # A change asked of one year is that year against the one before it.
        columns += period_columns(c.table.header, [q.years[0] - 1])
    column = columns[0] if columns else None
    if column is None:
        if q.years and header_names_years(c.table.header):
            score -= MISSING_PERIOD_PENALTY
        column = next((i for i, value in enumerate(row.values) if value), None)
    elif q.years:
        score += YEAR_BONUS
    if column is None or column >= len(row.values) or not row.values[column]:
        return 0.0
    c.column = column
    c.columns = [i for i in columns if i < len(row.values) and row.values[i]] or [column]
    if q.changed and len(c.columns) >= 2:
        # Two periods set against each other are answered by the row that holds both.
        score += BOTH_PERIODS_BONUS
    if "figure" in q.kinds:
        score += KIND_BONUS
    elif q.kinds:
        score -= KIND_BONUS  # a date or a place is not in a row of figures
    return score


def _ranked(question: str, passages: list[Passage]) -> list[_Candidate]:
    return _ranked_for(_question(question, passages), passages)


def _ranked_for(q: _Question, passages: list[Passage]) -> list[_Candidate]:
    candidates = [c for i, p in enumerate(passages) for c in _candidates(i, p)]
    weights = idf([c.terms for c in candidates])
    for candidate in candidates:
        candidate.score = _score(candidate, q, weights, len(passages))
    # Best first; on a tie the search's order, then the passage's own order.
    return sorted(candidates, key=lambda c: -c.score)


def _quoted_sentences(candidate: _Candidate) -> list[str]:
    """The sentence and those after it in its paragraph, while they fit."""
    quoted = [candidate.text]
    length = len(candidate.text)
    for sentence in candidate.following:
        length += len(sentence) + 1
        if length > MAX_QUOTE_CHARS:
            break
        quoted.append(sentence)
    return quoted


def _prose_quote(candidate: _Candidate) -> str:
    return _shortened(" ".join(_quoted_sentences(candidate)), MAX_SENTENCE_CHARS)


def _shortened(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def _table_lines(candidate: _Candidate) -> list[str]:
    """The row under its table's header (and the group row above it), word for word."""
    assert candidate.table is not None and candidate.row is not None
    row = candidate.row
    lines = candidate.table.header_lines
    if row.group is not None:
        lines.append(row.group.line)
    lines.append(row.line if row.numeric else _shortened(row.line, MAX_SENTENCE_CHARS))
    return lines


def _row_name(row: TableRow) -> str:
    return f"{row.group.label}, {row.label}" if row.group else row.label


def _row_reading(candidate: _Candidate) -> str:
    """What the row says for each period asked: "Greater China, Operating income, 2024:
    $27,082" (names and figures as the table writes them; further periods after a ";")."""
    assert candidate.table is not None and candidate.row is not None
    row = candidate.row
    header = candidate.table.header
    readings: list[str] = []
    for column in candidate.columns or [candidate.column or 0]:
        period = header.values[column] if header and column < len(header.values) else ""
        value = row.values[column]
        readings.append(f"{period}: {value}" if period else value)
    name = _row_name(row)
    # "Mac, 2017: $25,850; 2016: $22,831"; a row without a period header: "Mac: $25,850".
    return f"{name}, {'; '.join(readings)}" if ":" in readings[0] else f"{name}: {readings[0]}"


def _change_reading(candidate: _Candidate, question: str) -> str | None:
    """How a row moved between the two periods asked, earlier to later: "North America,
    Operating income fell from $7,267 in 2018 to $7,033 in 2019", behind "Yes: " or "No: "
    when the question asks yes or no about one direction. None without two periods whose
    years and amounts read."""
    assert candidate.table is not None and candidate.row is not None
    header, row = candidate.table.header, candidate.row
    dated = [
        (year, column, amount)
        for column in candidate.columns[:2]
        if (year := column_year(header, column)) is not None
        and (amount := _amount(row.values[column])) is not None
    ]
    if len(dated) != 2 or dated[0][0] == dated[1][0]:
        return None
    (old_year, old, old_amount), (new_year, new, new_amount) = sorted(dated)
    moved: Direction | None = (
        "up" if new_amount > old_amount else "down" if new_amount < old_amount else None
    )
    verb = {"up": "rose", "down": "fell", None: "was unchanged"}[moved]
    reading = (
        f"{_row_name(row)} {verb} from {row.values[old]} in {old_year} "
        f"to {row.values[new]} in {new_year}"
    )
    asked = yes_no_direction(question)
    if asked is None:
        return reading
    return f"{'Yes' if asked == moved else 'No'}: {reading}"


def best_quote(question: str, passage: Passage) -> str:
    """The passage's sentence (with the ones after it while they fit) or table row (under
    its header) that best answers the question; word for word."""
    ranked = _ranked(question, [passage])
    if not ranked:
        return passage.text.strip()[:MAX_QUOTE_CHARS]
    best = ranked[0]
    if best.table is not None:
        return "\n".join(_table_lines(best))
    return _prose_quote(best)


def search_scope(arguments: ToolArguments, companies: dict[str, str]) -> str:
    """Where a search looked, for the answer that found nothing: "for Apple's 10-K for fiscal
    2022 " (companies: symbol → name); nothing for a call that searched no documents."""
    if not isinstance(arguments, SearchDocumentsArgs):
        return ""
    parts: list[str] = []
    symbols, forms = arguments.symbols or [], arguments.forms or []
    if symbols:
        names = " or ".join(possessive(companies.get(s, s)) for s in symbols)
        parts.append(f"in {names} {' or '.join(forms) or 'filings'}")
    elif forms:
        parts.append(f"in the {' or '.join(forms)} documents")
    if arguments.fiscal_year:
        quarter = arguments.fiscal_quarter
        parts.append(f"for {f'Q{quarter} of ' if quarter else ''}fiscal {arguments.fiscal_year}")
    if arguments.collection:
        parts.append(f"in {arguments.collection}")
    return " ".join(parts) + " " if parts else ""


def _chosen(
    ranked: list[_Candidate],
    passages: list[Passage],
    asked: AbstractSet[str] = frozenset(),
    alternatives: bool = False,
) -> list[_Candidate]:
    """The best candidate, and up to two more that score near it: one per table, unless a
    row names something asked (`asked`: the question's topic words) that the rows already
    chosen from its table do not ("Europe or Greater China?": a row each); no sentence
    twice. With `alternatives` (which of two is the larger), a row that names only what the
    rows chosen already name gives way to one that names the other. Without any match, the
    search's best passage's first sentence."""
    if not ranked or ranked[0].score <= 0:
        first = [c for c in ranked if c.passage_index == 0]
        return first[:1]
    best = ranked[0].score
    chosen: list[_Candidate] = []
    quoted: set[str] = set()  # sentences already shown, in a quote of their own or another's
    # What the rows chosen from each table name of what was asked.
    tables: dict[tuple[int, int], set[str]] = {}
    named_by_rows: set[str] = set()
    for candidate in ranked:
        if len(chosen) == MAX_QUOTES or candidate.score < RUNNER_UP_SHARE * best:
            break
        if candidate.table is not None:
            table_key = (candidate.passage_index, id(candidate.table))
            named = candidate.terms & asked
            if table_key in tables and (
                not named - tables[table_key] or _TOTAL_RE.match(candidate.text)
            ):
                # A row of a table already quoted adds only a part the others do not name;
                # a total is the sum of the parts, not one of them.
                continue
            if alternatives and named and named <= named_by_rows:
                continue  # the same thing again, from another table
            tables.setdefault(table_key, set()).update(named)
            named_by_rows |= named
            sentences = [candidate.text]
        else:
            sentences = _quoted_sentences(candidate)
        if quoted & set(sentences):
            continue
        quoted.update(sentences)
        chosen.append(candidate)
    return chosen


def _heading_note(passage: Passage) -> str:
    """The section a passage sits in (", under “Uncertain Tax Positions”"), when it is a
    short name whose numbers are the passage's own."""
    heading = " ".join((passage.heading or "").split())
    # A page footer ("Apple Inc. | 2024 Form 10-K | 7") or contents line names no section.
    if not heading or len(heading) > 60 or "|" in heading or "contents" in heading.lower():
        return ""
    # The validator holds every number shown to a number the passages write whole.
    written = {m.group() for m in _WHOLE_NUMBER_RE.finditer(passage.text)}
    if any(n not in written for n in _DIGITS_RE.findall(heading)):
        return ""
    return f", under “{heading}”"


_TOTAL_RE = re.compile(r"^\W*total\b", re.IGNORECASE)
# Two periods set against each other, with no word of which way.
_COMPARED = re.compile(r"\b(?:compared|versus|vs\.?|against|than)\b", re.IGNORECASE)
# A question that asks which of the named things is the larger.
_WHICH_LARGER = re.compile(
    r"\b(?:which|whose|who)\b.*\b(?:more|higher|larger|bigger|greater|most|highest|largest)\b"
    # "Did it get more revenue from A or from B?"
    r"|\b(?:more|higher|larger|bigger|greater)\b.*\bor\b",
    re.IGNORECASE,
)


def _amount(written: str) -> float | None:
    """A table cell's amount: "48,492", "$26,487", "(16,861)" (negative)."""
    digits = _DIGITS_RE.search(written)
    if digits is None:
        return None
    value = float(digits.group().replace(",", ""))
    return -value if "(" in written else value


def _rows_lead(question: str, rows: list[_Candidate], numbers: list[int]) -> str:
    """ "Europe, 2016: 49,952 [1]; Greater China, 2016: 48,492 [1]." and, when the question
    asks which is the larger, which row it is."""
    # A row two tables print alike is read once, citing both.
    cited: dict[str, list[int]] = {}
    for row, number in zip(rows, numbers, strict=True):
        cited.setdefault(_row_reading(row), []).append(number)
    readings = [
        f"{reading} {''.join(f'[{n}]' for n in dict.fromkeys(ns))}" for reading, ns in cited.items()
    ]
    lead = "; ".join(readings) + "."
    change = _change_reading(rows[0], question) if len(rows[0].columns) >= 2 else None
    if change is not None:
        # How the first row moved answers first; every row's figures follow.
        lead = f"{change} [{numbers[0]}]. {lead}"
    # Every row here is a numeric row (the caller's choice), read in its period's column.
    named = [(row.row.label, _amount(row.row.values[row.column or 0])) for row in rows if row.row]
    if len(named) >= 2 and _WHICH_LARGER.search(question) and all(a is not None for _, a in named):
        label, _ = max(named, key=lambda pair: pair[1] or 0.0)
        lead = f"{label} is the larger: {lead}"
    return lead


def _on_topic(candidate: _Candidate, q: _Question) -> bool:
    """Whether the sentence answers what was asked about: it (with its paragraph) holds half
    the question's topic words, or a filing's several-word wording of the ask ("full-time
    equivalent employees"); a lone common word ("employees") only when the ask is all the
    question names."""
    said = plain(" ".join(_quoted_sentences(candidate)))
    if not q.terms:
        # The ask's wording is all the topic there is ("how many employees").
        return any(phrase in said for phrase in q.answers)
    if any(" " in phrase and phrase in said for phrase in q.answers):
        return True
    # Its paragraph names the subject once for all its sentences ("Harbor Freight Lines
    # filed a lawsuit… On March 3 the court ruled…").
    held = q.terms & (candidate.terms | candidate.paragraph)
    return len(held) >= TOPIC_SHARE * len(q.terms)


# How many of a passage's lines on either side of a quoted sentence are read for a name.
_NEARBY_LINES = 3


def _lines_around(candidate: _Candidate) -> list[str]:
    """The passage's non-empty lines near the candidate's sentence, nearest first."""
    lines = [" ".join(line.split()) for line in candidate.passage.text.splitlines()]
    lines = [line for line in lines if line]
    opening = candidate.text[:40]
    at = next((i for i, line in enumerate(lines) if opening in line), None)
    if at is None:
        return []
    nearby = []
    for distance in range(1, _NEARBY_LINES + 1):
        nearby += [lines[i] for i in (at - distance, at + distance) if 0 <= i < len(lines)]
    return nearby


def _worded(lines: list[str], q: _Question) -> list[str]:
    """The lines that hold a filing's wording of the ask ("… LLP" for who audits)."""
    phrases = [*q.answers, *q.also]
    return [line for line in lines if any(p in plain(line) for p in phrases)]


def _prose_lead(
    q: _Question, chosen: list[_Candidate], passages: list[Passage]
) -> tuple[list[str], list[_Candidate]] | None:
    """For each kind of answer asked (a name, a count, a figure, a date), the span of the
    quoted prose that gives it, from the best quote that holds one; None when none does."""
    kinds = lead_kinds(q.kinds)
    # The filer's name and ticker ("AAPL") name no answer.
    symbols = " ".join(p.symbol or "" for p in passages)
    ignored = terms(" ".join(_company_words(passages)) + " " + symbols)
    spans: list[str] = []
    answering: list[_Candidate] = []
    # A name is never made of the question's own words; the filings' wordings of the ask
    # ("… LLP" for who audits) may be in it.
    asked_words = {kind: terms(q.text) if kind == "name" else q.said for kind in kinds}
    # The best quote's passage answers; a lesser quote from another passage is only near it.
    # And only a quote on the question's topic: the best of several sentences that miss it
    # is still quoted, but what it holds is not stated as the answer.
    answering_passage = chosen[0].passage.source_id
    quotes = [
        c
        for c in chosen
        if c.table is None and c.passage.source_id == answering_passage and _on_topic(c, q)
    ]
    for kind in kinds:
        for candidate in quotes:
            texts = _quoted_sentences(candidate)
            if kind == "name":
                # A name may stand on a line of its own beside the sentence: the auditor's
                # signature ("/s/ … LLP") above "We have served as … auditor since 2009";
                # a line that holds a filing's wording of the ask, not any heading near it.
                texts += _worded(_lines_around(candidate), q)
            found = next(
                (
                    span
                    for text in texts
                    if (span := answer_span(text, kind, asked_words[kind], ignored, q.terms))
                    is not None
                ),
                None,
            )
            if found is not None:
                if found not in spans:
                    spans.append(found)
                    answering.append(candidate)
                break
    return (spans, answering) if spans else None


def compose_passages_answer(
    question: str,
    passages: list[Passage],
    sources: list[Source],
    scope: str | None = None,
    topic: str | None = None,
) -> tuple[str, list[Citation]]:
    """The sentence or table row of the passages that answers the question, and up to two
    more that nearly do, each quoted with a `[n]` citation (citation n is the n-th in the
    returned list). `scope` says where nothing was found ("for Apple's 10-K for fiscal
    2022 "), `topic` what was looked for."""
    unique = list({p.source_id: p for p in passages}.values())
    if not unique:
        about = f"about “{topic}” " if topic else ""
        return (
            f"No passage {about}was found {scope or ''}among the documents finq has loaded. Load "
            "filings with 'finq ingest filings DIR', or upload a document to POST "
            "/v1/documents, and ask again.",
            [],
        )
    asked = _question(question, unique)
    chosen = _chosen(
        _ranked_for(asked, unique), unique, asked.terms, bool(_WHICH_LARGER.search(question))
    )
    if not chosen:
        # Nothing in the passages reads as sentences or rows: show the best one as it is.
        quote = unique[0].text.strip()[:MAX_QUOTE_CHARS]
        chosen_passages = [(unique[0], f'"{quote}"')]
    else:
        chosen_passages = []
    by_id = {source.source_id: source for source in sources}
    lines: list[str] = []
    citations: list[Citation] = []
    numbers: dict[str, int] = {}

    def cite(passage: Passage) -> int:
        if passage.source_id not in numbers:
            # The tools send each passage with its source; the title stands in without one.
            source = by_id.get(passage.source_id) or Source(
                source_id=passage.source_id,
                label=passage.title,
                form=passage.form,
                url=passage.link,
                page=passage.page,
            )
            citations.append(source_citation(source))
            numbers[passage.source_id] = len(citations)
        return numbers[passage.source_id]

    for passage, quote in chosen_passages:
        number = cite(passage)
        lines.append(f"[{number}] {citations[number - 1].label}: {quote}")
    rows = [c for c in chosen if c.row is not None and c.row.numeric]
    if rows and rows[0] is chosen[0]:
        # The asked figures first, each as its row and column name it; the quotes beneath.
        lines.append(_rows_lead(question, rows, [cite(c.passage) for c in rows]))
    elif (
        chosen
        and chosen[0].table is None
        and not _WHICH_LARGER.search(question)  # its answer is a row's name, not a span
        and (lead := _prose_lead(asked, chosen, unique))
    ):
        # The asked thing read out of the quoted sentences first; the quotes beneath.
        spans, answering = lead
        lines.append(
            "; ".join(
                f"{span} [{cite(c.passage)}]" for span, c in zip(spans, answering, strict=True)
            ).join(("", "."))
        )
        lines[-1] = lines[-1][:1].upper() + lines[-1][1:]
    prose_lines: dict[str, int] = {}  # a passage's line of quotes, by its source id
    for candidate in chosen:
        passage = candidate.passage
        number = cite(passage)
        label = citations[number - 1].label + _heading_note(passage)
        if candidate.table is None and passage.source_id in prose_lines:
            # A second sentence of the same passage joins its line: one citation, one label.
            lines[prose_lines[passage.source_id]] += f' … "{_prose_quote(candidate)}"'
        elif candidate.row is not None and candidate.row.numeric:
            table = "\n".join(_table_lines(candidate))
            lines.append(
                f"[{number}] {label}, from the filing's table: {_row_reading(candidate)}\n{table}"
            )
        elif candidate.table is not None:
            table = "\n".join(_table_lines(candidate))
            lines.append(f"[{number}] {label}, from the filing's table:\n{table}")
        else:
            prose_lines[passage.source_id] = len(lines)
            lines.append(f'[{number}] {label}: "{_prose_quote(candidate)}"')
    return "\n".join(lines), citations
