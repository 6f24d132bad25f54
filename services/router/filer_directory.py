"""Which of SEC's filers a question names, among all of them (shared/sec_filers.py): more
than ten thousand names and tickers, many of them ordinary English (A, ALL, IT, ON, NOW,
COST, NET, CASH) or containing another company's name ("Apple Hospitality REIT").

The order of evidence:
1. A company's name, the longest that fits at a place ("Apple Hospitality REIT" over
   "Apple"), current or former ("Apple Computer"); a name that is one ordinary English
   word ("Apple", "Target") only when written with a capital.
2. A ticker written as one: `$NET`, "ticker NET", lower case that English rarely uses
   (aapl), capitals beside a financial word ("NET revenue", "AAPL stock"). Capitals alone
   are abbreviations as often ("the IRS", "an RSI above 70"), so they need the financial
   word, whether or not a dictionary holds them. An ordinary sentence never becomes a ticker.
3. The first words of a name ("Berkshire" for Berkshire Hathaway), when they fit one
   company, or one far larger than the others that fit ("Meta" for Meta Platforms).

A name that fits several companies alike is given as all of them, for the router to ask
which one is meant.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Literal

from wordfreq import zipf_frequency

from shared.sec_filers import Filer

# Words a company's name carries that people leave out: "Apple" for "Apple Inc.",
# "Amazon" for "AMAZON COM INC".
_LEGAL_WORDS = frozenset(
    {
        "inc",
        "incorporated",
        "corp",
        "corporation",
        "co",
        "company",
        "ltd",
        "limited",
        "plc",
        "llc",
        "lp",
        "sa",
        "nv",
        "ag",
        "se",
        "com",
        "sab",
        "cv",
        "spa",
        "bv",
        "oyj",
        "asa",
    }
)
# What a ticker in capitals that is also an English word must stand beside to be read as
# a ticker: "NET revenue", "COST stock".
FINANCIAL_WORDS = frozenset(
    {
        "revenue",
        "revenues",
        "sales",
        "earnings",
        "eps",
        "income",
        "profit",
        "profits",
        "margin",
        "margins",
        "stock",
        "stocks",
        "share",
        "shares",
        "price",
        "prices",
        "dividend",
        "dividends",
        "guidance",
        "quarter",
        "quarterly",
        "results",
        "10-k",
        "10-q",
        "filing",
        "filings",
        "report",
        "reported",
        "reports",
        "valuation",
        "cap",
        "capitalization",
        "debt",
        "cash",
        "ebitda",
        "outlook",
        "forecast",
        "ticker",
        "fiscal",
        "annual",
        "buyback",
        "gross",
        "total",
        "orders",
        "volume",
        "funds",
        "operations",
        "growth",
        "segment",
        "users",
        "subscribers",
        "deliveries",
        "backlog",
        "bookings",
        "stores",
        "trading",
    }
)
# Where a bare name is too general to name anyone: more companies than this share it.
MAX_CANDIDATES = 6
# A first word shared by several companies names the largest when it is among the largest
# filers and every other is far down the list. SEC's list has a row per ticker (share
# classes, preferred shares), so its first 500 rows are roughly the 400 largest companies:
# the scale of the S&P 500, the companies people name by one word.
WELL_KNOWN_RANK = 500
FAR_DOWN_FACTOR = 10

# Finance's abbreviations and a few of plain English's ("vs", "etc"), which are also
# tickers (C3.ai is AI, Armour Residential ARR, First Commonwealth FCF): read as tickers
# only with `$` or "ticker".
FINANCE_ABBREVIATIONS = frozenset(
    {
        "ai",
        "arr",
        "fcf",
        "eps",
        "ebit",
        "ebitda",
        "roe",
        "roa",
        "roi",
        "roic",
        "gaap",
        "capex",
        "opex",
        "yoy",
        "qoq",
        "ttm",
        "ltm",
        "cagr",
        "ceo",
        "cfo",
        "coo",
        "cto",
        "ipo",
        "etf",
        "gdp",
        "cpi",
        "usa",
        "us",
        "uk",
        "eu",
        "fy",
        "q1",
        "q2",
        "q3",
        "q4",
        "h1",
        "h2",
        "sec",
        "nyse",
        "nasdaq",
        "esg",
        "dcf",
        "pe",
        "ev",
        "nav",
        "ffo",
        "aum",
        "apr",
        "apy",
        "vs",
        "etc",
        "eg",
        "ie",
        "approx",
        "avg",
        "est",
        "pct",
        "yr",
        "yrs",
        "qtr",
        "npv",
        "irr",
        "comp",
        "comps",
        "eod",
        "eoy",
        "ytd",
        "mtd",
        "bps",
        "lng",
        "lpg",
        "ngl",
        "saas",
        "hvac",
        "evs",
        "suv",
        "gpu",
        "cpu",
        "api",
        "ip",
        "bdc",
        "bdcs",
        "mlp",
        "mlps",
        "reit",
        "reits",
        "nim",
        "nii",
        "nol",
        "hy",
        "ig",
        "cds",
        "clo",
        "mbs",
        "abs",
        "etn",
        "adr",
        "ads",
        "spac",
        "lbo",
        "fx",
        "wacc",
        "capm",
        "cogs",
        "ppe",
        "ifrs",
        "fasb",
        "finra",
        "fomc",
        "ecb",
        "ppi",
        "pce",
        "pmi",
        "nfp",
        "otc",
        "atm",
        "itm",
        "otm",
        "dte",
        "qtd",
        "mom",
        "ntm",
        "fwd",
        "dps",
        "ocf",
        "roce",
        "tsr",
        "kpi",
        "kpis",
        "arpu",
        "mau",
        "dau",
        "gmv",
        "aov",
        "ltv",
        "cac",
        "tam",
        "rev",
        "fico",
        "hsa",
        "ira",
        "401k",
        # Chat shorthand people type in questions ("imo dividends are overrated").
        "imo",
        "imho",
        "tbh",
        "fyi",
        "btw",
        "iirc",
        "afaik",
        "asap",
        "idk",
        "lol",
        "pls",
        "thx",
    }
)

# Market indexes people call by a company's name: "the Dow", "the Nasdaq", "S&P 500" (Dow
# Inc., Nasdaq, Inc. and S&P Global file with SEC). After "the" or before a number or
# "index", and not a possessive or before a financial word, the words are the index.
MARKET_INDEXES = frozenset({"dow", "nasdaq", "russell", "nyse", "footsie", "nikkei", "s and p"})
_INDEX_FOLLOWERS = frozenset({"index", "indexes", "indices", "futures", "composite", "average"})

# Words questions begin with: a company whose name is one of them ("Can B Corp", "ON
# Semiconductor" begins with "on") is not named by a question's first word.
QUESTION_OPENERS = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "so",
        "if",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "may",
        "might",
        "must",
        "shall",
        "has",
        "have",
        "had",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "when",
        "where",
        "tell",
        "show",
        "give",
        "list",
        "compare",
        "get",
        "find",
        "pull",
        "open",
        "go",
        "let",
        "please",
        "now",
        "then",
        "also",
        "all",
        "any",
        "each",
        "every",
        "both",
        "some",
        "no",
        "not",
        "on",
        "in",
        "at",
        "by",
        "for",
        "from",
        "of",
        "to",
        "with",
        "about",
        "over",
        "under",
        "into",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "my",
        "our",
        "your",
        "their",
        "his",
        "her",
        "i",
        "we",
        "you",
        "they",
        "just",
        "only",
        "still",
        "even",
        "yet",
        "again",
        "once",
        "first",
        "next",
        "last",
        "new",
        "best",
        "top",
        "key",
        "good",
        "real",
    }
)

# Words before a noun, never before a name: what follows one is a word of the sentence.
_DETERMINERS = frozenset(
    {
        "a",
        "an",
        "the",
        "another",
        "much",
        "many",
        "more",
        "less",
        "few",
        "my",
        "your",
        "our",
        "his",
        "her",
        "its",
        "their",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
        "no",
        "each",
        "every",
    }
)

# The small words inside a name, written in lower case ("Smith & Wesson", "Bank of America").
_NAME_JOINERS = frozenset({"and", "of", "the", "de", "for", "on"})

# SEC's "/DE/", "/NV", "\\DE" after a name
_STATE_MARK = re.compile(r"[/\\][a-z]{2,3}[/\\]?")
_TRAILING_STATE_MARK = re.compile(r"\s*" + _STATE_MARK.pattern + r"\s*$", re.I)
_TOKEN = re.compile(r"\$?[A-Za-z0-9]+(?:['’.\-&][A-Za-z0-9]+)*")
# The words a company's name is matched on, in the name and in the question alike (here and
# in the held directory, services/router/rules.py): "Coca-Cola" and "coca cola" are both
# ("coca", "cola").
NAME_PART = re.compile(r"[A-Za-z0-9]+")
_INITIAL_END = re.compile(r"(?:^|[\s.])[A-Z]\.$")

How = Literal["name", "former_name", "ticker", "first_words"]
# Stronger evidence first: a fuzzier kind counts only where no stronger one was found.
_STRENGTH: dict[str, int] = {"name": 0, "former_name": 0, "ticker": 1, "first_words": 2}


@dataclass(frozen=True)
class FilerMention:
    """A place in the question that names a filer: one CIK, or several alike (ask which)."""

    text: str
    ciks: tuple[int, ...]
    how: How

    @property
    def ambiguous(self) -> bool:
        return len(self.ciks) > 1


# SEC's titles abbreviate ("FARMER BROS CO", "INTL", "HLDGS"); so do people.
_SPELLED_OUT = {
    "bros": "brothers",
    "intl": "international",
    "natl": "national",
    "hldgs": "holdings",
    "grp": "group",
    "mfg": "manufacturing",
    "svcs": "services",
}


def unaccented(text: str) -> str:
    """The text with accents dropped: "Estée" is written "Estee" as often, and SEC writes
    "ESTEE"."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def surname_first_orders(key: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The orders people write a name SEC files surname first: "HUNT J B TRANSPORT" is
    "J B Hunt Transport", "PRICE T ROWE GROUP" is "T Rowe Price Group" (the initials, then
    the surname, or one given name between)."""
    given = 2 if len(key) > 2 and len(key[1]) > 1 and len(key[2]) == 1 else 1
    run = given
    while run < len(key) and len(key[run]) == 1:
        run += 1
    if run == given or len(key[0]) == 1:
        return []
    # "SANFILIPPO JOHN B & SON": a given name before the initials; "SMITH A O": no more.
    initials, rest = key[1:run], key[run:]
    orders = [initials + key[:1] + rest]
    if given == 1 and rest:
        orders.append(initials + rest[:1] + key[:1] + rest[1:])
    return orders


def display_name(name: str) -> str:
    """SEC's title without its state or form marks: "COSTCO WHOLESALE CORP /NEW" is
    "COSTCO WHOLESALE CORP"."""
    return _TRAILING_STATE_MARK.sub("", name).strip() or name


def name_words(text: str) -> tuple[str, ...]:
    """A name as the words it is matched on: lower case, "&" as "and", apostrophes
    dropped ("Kohl's" is "kohls"), other punctuation a break ("Coca-Cola": "coca cola"),
    abbreviations spelled out."""
    text = _STATE_MARK.sub(" ", unaccented(text).lower().replace("&", " and "))
    words = re.findall(r"[a-z0-9]+", re.sub(r"['’]", "", text))
    return tuple(_SPELLED_OUT.get(word, word) for word in words)


def name_key(name: str, letters: bool = False) -> tuple[str, ...]:
    """The words of a name without a leading "the" and its trailing legal words, spelled
    out or in letters ("S A B DE C V", "N V", "PLC"); with `letters`, a run of letters at
    the end is kept (they may be initials: "SMITH A O CORP")."""
    words = list(name_words(name))
    if words[:1] == ["the"]:
        words = words[1:]
    # Legal words inside a name too: "OIL DRI CORP OF AMERICA" is asked as "Oil-Dri
    # Corporation of America" and as "Oil-Dri".
    inner = [w for w in words[:-1] if w not in _LEGAL_WORDS] + words[-1:]
    words = inner if inner else words
    legal_form = False  # "DE" belongs to one ("SAB DE CV"), never a name's last word
    while len(words) > 1 and (words[-1] in _LEGAL_WORDS or (legal_form and words[-1] == "de")):
        words.pop()
        legal_form = True
    # A legal form in letters ("S A B DE C V", "N V"): a run of two or more at the end.
    run = 0
    while run < len(words) - 1 and (len(words[-1 - run]) == 1 or words[-1 - run] == "de"):
        run += 1
    if run >= 2 and not letters:
        words = words[:-run]
    return tuple(words)


@dataclass(frozen=True)
class _Token:
    raw: str  # as written, without a leading "$" or a possessive
    word: str  # lower case
    dollar: bool
    # The words a name is matched on, and the same with a possessive kept as an s
    # ("Kohl's": ["kohl"] and ["kohls"]).
    parts: tuple[str, ...]
    kept_s: tuple[str, ...]
    # The first word of a sentence, capitalised whatever it is.
    opens: bool
    # Written "Target's": a name more than an ordinary word is.
    possessive: bool
    # Written after "the": "the Dow" is an index.
    after_the: bool = False

    @property
    def capitalised(self) -> bool:
        return self.raw[:1].isupper() and not self.raw.isupper()

    @property
    def acronym(self) -> bool:
        """In capitals, as tickers and abbreviations are written ("TV", "HSBC")."""
        return self.raw.isupper()


@dataclass(frozen=True)
class _Context:
    """What is around a span of words that may name a company: how the question is
    written and what comes before and after the span."""

    shouting: bool  # the question is written in capitals
    legal: bool = False  # the span ends in a legal word ("Flex Ltd.")
    named: bool = False  # legal, possessive, or of a figure: written as a company
    of_figure: bool = False  # a financial word follows within two words
    in_unknown_name: bool = False  # after a capitalised word that named nobody
    after_name: bool = False  # right after a company's name
    index_follows: bool = False  # a number or "index" follows ("S&P 500")
    name_goes_on: bool = False  # a capitalised word follows ("State Farm")
    legal_follows: bool = False  # a legal word follows ("Acme Corporation")


def _tokens(question: str) -> list[_Token]:
    tokens = []
    text_of = unaccented(question).replace("&", " and ")
    for match in _TOKEN.finditer(text_of):
        text = match.group(0)
        dollar = text.startswith("$")
        raw = re.sub(r"['’][sS]$", "", text.lstrip("$"))
        possessive = raw != text.lstrip("$")
        parts = tuple(p.lower() for p in NAME_PART.findall(re.sub(r"['’]", "", raw)))
        kept_s = name_words(text.lstrip("$")) or parts
        before = text_of[: match.start()].rstrip(" \t\"'“‘(")
        # An initial's full stop ("T. Rowe Price", "J.B. Hunt") ends no sentence.
        opens = not before or (before[-1] in ".!?:;\n" and not _INITIAL_END.search(before))
        after_the = before.lower().endswith(" the") or before.lower() == "the"
        tokens.append(_Token(raw, raw.lower(), dollar, parts, kept_s, opens, possessive, after_the))
    return tokens


class FilerDirectory:
    """Every filer's names, first words and tickers, with the English words that keep an
    ordinary sentence from naming anyone."""

    def __init__(self, filers: Iterable[Filer], english: frozenset[str]) -> None:
        self.english = english
        self.filers = {filer.cik: filer for filer in filers}
        self._names: dict[tuple[str, ...], set[int]] = {}
        self._former: dict[tuple[str, ...], set[int]] = {}
        self._first_words: dict[tuple[str, ...], set[int]] = {}
        self._tickers: dict[str, int] = {}
        for filer in self.filers.values():
            key = name_key(filer.name)
            for order in (
                (key, *surname_first_orders(name_key(filer.name, letters=True))) if key else ()
            ):
                self._names.setdefault(order, set()).add(filer.cik)
                for length in range(1, len(order)):
                    self._first_words.setdefault(order[:length], set()).add(filer.cik)
            for former in filer.former_names:
                former_key = name_key(former)
                if former_key:
                    self._former.setdefault(former_key, set()).add(filer.cik)
            for ticker in filer.tickers:
                self._tickers.setdefault(_ticker_form(ticker), filer.cik)
        self._longest = max((len(k) for k in (*self._names, *self._former)), default=1)

    def mentions(self, question: str) -> list[FilerMention]:
        """The filers a question names, in the order it names them: by the strongest kind
        of evidence the question holds (names, then tickers, then first words)."""
        tokens = _tokens(question)
        letters = [c for c in question if c.isalpha()]
        shouting = bool(letters) and sum(c.isupper() for c in letters) > 0.6 * len(letters)
        found: list[FilerMention] = []
        at = 0
        named_until = 0  # tokens before this were read as part of a mention
        while at < len(tokens):
            before = tokens[at - 1] if at > 0 and at > named_until - 1 else None
            # "Lego Group", "S.C. Johnson": a capitalised word that named nobody goes on as
            # a name finq does not know, whose next word is not another company's start.
            in_unknown_name = (
                before is not None
                and at >= named_until
                and not shouting
                and before.raw[:1].isupper()
                and before.word not in QUESTION_OPENERS
                and not before.possessive
            )
            # Right after a company's name, words that only begin another's are what the
            # first one makes or where it sells: "Papa John's North America", "Sony
            # PlayStation".
            after_name = bool(found) and at == named_until
            mention, used = self._name_at(tokens, at, shouting, in_unknown_name, after_name)
            if mention is not None and used == 1 and len(mention.ciks) > 1:
                # One word that fits several companies' names and is one's ticker, written
                # as a ticker ("SM stock", "UBS shares"): the ticker says which it is.
                ticker = self._ticker_at(tokens, at, shouting)
                if ticker is not None and ticker.ciks[0] in mention.ciks:
                    mention = ticker
            if mention is None:
                mention, used = self._ticker_at(tokens, at, shouting), 1
            if mention is not None:
                named_until = at + used
                if mention.ciks not in [m.ciks for m in found]:
                    found.append(mention)
            at += used
        if not found:
            return []
        strongest = min(_STRENGTH[m.how] for m in found)
        return [m for m in found if _STRENGTH[m.how] == strongest]

    def _name_at(
        self,
        tokens: list[_Token],
        at: int,
        shouting: bool,
        in_unknown_name: bool = False,
        after_name: bool = False,
    ) -> tuple[FilerMention | None, int]:
        if tokens[at].dollar or (at > 0 and tokens[at - 1].word in ("ticker", "symbol")):
            return None, 1  # written as a ticker: "$A", "ticker A"
        for length in range(min(self._longest, len(tokens) - at), 0, -1):
            span = tokens[at : at + length]
            if any(t.dollar for t in span):
                continue
            text = " ".join(t.raw for t in span)
            # A legal word after the words ("Flex Ltd.", "Escalade Inc.") says they are a
            # company's name, whatever else they are.
            legal = len(span) > 1 and span[-1].word.rstrip(".") in _LEGAL_WORDS
            words = span[:-1] if legal else span
            # Words a word or two before "revenue", "earnings", "stock" ("net sales", "net
            # interest margin") are what they are of.
            after = tokens[at + length : at + length + 2]
            of_figure = any(t.word in FINANCIAL_WORDS for t in after)
            # A name as written before the start of another's: "Carter's" is Carter's, Inc.
            # (CARTERS INC), not the start of Carter Bankshares.
            keys = sorted(
                self._keys(words), key=lambda k: k not in self._names and k not in self._former
            )
            follower = after[0] if after else None
            context = _Context(
                shouting=shouting,
                legal=legal,
                named=legal or span[-1].possessive or of_figure,
                of_figure=of_figure,
                in_unknown_name=in_unknown_name,
                after_name=after_name,
                index_follows=follower is not None
                and (follower.word.isdigit() or follower.word in _INDEX_FOLLOWERS),
                name_goes_on=follower is not None
                and not shouting
                and not span[-1].possessive
                and follower.raw[:1].isupper()
                and follower.raw[1:].islower()  # a word, not "RevPAR", "EyeQ" or "TV"
                and not follower.opens,
                legal_follows=follower is not None and follower.word.rstrip(".") in _LEGAL_WORDS,
            )
            for key in keys:
                mention = self._named(key, text, words, context)
                if mention is not None:
                    return mention, length
        return None, 1

    @staticmethod
    def _keys(span: list[_Token]) -> list[tuple[str, ...]]:
        """The span's words as a name is matched on, each possessive both ways ("Nathan's
        Famous": "nathan famous" and "nathans famous"), legal words left out as name_key
        leaves them out."""
        keys: list[tuple[str, ...]] = [()]
        for token in span:
            forms = dict.fromkeys((token.parts, token.kept_s))
            keys = [key + form for key in keys for form in forms]
        kept = []
        for key in keys:
            inner = tuple(w for w in key[:-1] if w not in _LEGAL_WORDS) + key[-1:]
            if inner and inner not in kept:
                kept.append(inner)
        return kept

    def _named(
        self, key: tuple[str, ...], text: str, span: list[_Token], context: _Context
    ) -> FilerMention | None:
        shouting, named, of_figure = context.shouting, context.named, context.of_figure
        if context.legal:
            ciks = {*self._names.get(key, ()), *self._former.get(key, ())}
            return FilerMention(text, self._ranked(ciks), "name") if ciks else None
        single_word = len(key) == 1 and self._ordinary(key[0])
        # One word in capitals with no figure of it beside it: written as abbreviations are.
        bare_acronym = len(span) == 1 and span[0].acronym and not named
        if len(span) == 1 and (
            len(span[0].raw) == 1 or (span[0].raw.islower() and len(key[0]) <= 2)
        ):
            # An initial alone names nobody; two lower-case letters are an abbreviation
            # ("a 50 bp cut"), as with tickers.
            return None
        if (
            " ".join(key) in MARKET_INDEXES
            and not (span[-1].possessive or of_figure)
            and (span[0].after_the or context.index_follows)
        ):
            return None  # "why did the Dow drop", "an S&P 500 fund": the index
        if (
            len(span) == 1
            and span[0].opens
            and not named
            and (key[0] in QUESTION_OPENERS or (single_word and not self._well_known(key)))
        ):
            # A sentence's first word is capitalised anyway: "Can you...", "Team, can we
            # ...", "Nice, now..." name nobody; "Apple revenue" names Apple.
            return None
        if key in self._names or key in self._former:
            if single_word and not self._capitalised(span[0], shouting):
                return None
            if bare_acronym and not self._well_known(key):
                # A name that is one acronym is written as abbreviations are ("AGI for
                # the Roth IRA"): as with tickers, it needs a figure of it beside it.
                return None
            if (
                len(key) > 1
                and all(t.raw.islower() for t in span)
                and all(self._is_english(word) for word in key)
                and not self._well_known(key)
            ):
                # "top ten holdings": ordinary words in lower case name only a company
                # everyone knows by them ("general motors").
                return None
            if key in self._former and key not in self._names:
                return FilerMention(text, self._ranked(self._former[key]), "former_name")
            return FilerMention(text, self._with_namesakes(key), "name")
        if key in self._first_words:
            # Part of a name, written as a name: each word capitalised. One ordinary word
            # names only a company far larger than the others it begins ("Meta", "Delta"),
            # never a list to choose from ("Good").
            # Or in lower case, two words or more of a company everyone knows by them
            # ("interactive brokers"), as with whole names.
            lower_case_known = (
                len(span) > 1 and all(t.raw.islower() for t in span) and self._well_known(key)
            )
            if not (self._written_as_a_name(span, shouting) or lower_case_known):
                return None
            if (context.in_unknown_name and len(span) == 1) or context.after_name:
                return None
            ordinary = all(self._ordinary(word) for word in key)
            if (context.legal or context.legal_follows) and not self._well_known(key):
                # A legal word ends a name: "Siemens AG" is a whole name, and not that of
                # Siemens Energy AG, which it only begins. (People shorten the names of
                # companies everyone knows: "Meta Inc.")
                return None
            if context.name_goes_on and (ordinary or context.legal_follows):
                # Ordinary words opening a longer name finq does not know: "State Farm",
                # "Delta Dental" name no State Street or Delta Air Lines ("Sony PlayStation"
                # is Sony's: its name is no word); nor does any name before a legal word
                # that names nobody ("Acme Corporation" is not Acme United).
                return None
            if bare_acronym and (everyday(key[0]) or not self._well_known(key)):
                # An acronym alone ("TV advertising") begins no name but a well-known
                # company's that it is no word of ("HSBC", "BHP").
                return None
            if len(span) == 1 and span[0].opens and everyday(key[0]) and not self._well_known(key):
                # An everyday word opening a sentence ("Net margin versus…", "Group
                # results…") begins only a name everyone knows by it.
                return None
            chosen = self._by_first_words(self._first_words[key])
            if chosen is None or (lower_case_known and len(chosen) > 1):
                return None
            if (
                ordinary
                and len(span) == 1
                and span[0].opens
                and span[0].possessive
                and not of_figure
            ):
                # The start of a name in ordinary words, opening a sentence, with an "'s"
                # that may be "is" or an idiom ("Sun's out", "Arm's length"): a company
                # only when a figure of it follows.
                return None
            if single_word and not named and (len(chosen) > 1 or not self._well_known(key)):
                # "Games", "Hope", "Good Friday": one ordinary word names a company everyone
                # knows by it, or one written as a company ("Toro revenue", "Rocket's").
                return None
            return FilerMention(text, chosen, "first_words")
        return None

    def names_of(self, ticker: str) -> list[str]:
        """What people call the company with this ticker, lower case: its name without legal
        words, and the fewest first words that name it alone ("COSTCO WHOLESALE CORP /NEW":
        "costco wholesale", "costco"); never one English word ("target"), which a sentence
        uses as a word. [] for a ticker SEC does not list."""
        cik = self._tickers.get(_ticker_form(ticker))
        if cik is None:
            return []
        key = name_key(self.filers[cik].name)
        names = [" ".join(key)] if key else []
        for length in range(1, len(key)):
            prefix = key[:length]
            if self._by_first_words(self._first_words.get(prefix, set())) == (cik,):
                names.append(" ".join(prefix))
                break
        return [name for name in dict.fromkeys(names) if " " in name or not self._is_english(name)]

    def _written_as_a_name(self, span: list[_Token], shouting: bool) -> bool:
        """Each word capitalised, but for the small words inside a name ("Smith & Wesson",
        "Oil-Dri Corporation of America")."""
        inner = span[1:-1]
        return (
            self._capitalised(span[0], shouting)
            and self._capitalised(span[-1], shouting)
            and all(self._capitalised(t, shouting) or t.word in _NAME_JOINERS for t in inner)
        )

    def _well_known(self, key: tuple[str, ...]) -> bool:
        """Whether the largest company the words name or begin is among the largest filers."""
        ciks = {
            *self._names.get(key, ()),
            *self._former.get(key, ()),
            *self._first_words.get(key, ()),
        }
        return bool(ciks) and min(self.filers[c].rank for c in ciks) < WELL_KNOWN_RANK

    def _capitalised(self, token: _Token, shouting: bool) -> bool:
        """Written as a name: capitalised, or in capitals when not an English word ("UFP");
        in a question written all in capitals, any word no dictionary holds ("SYSCO'S")."""
        if len(token.raw) == 1:
            return token.raw.isupper() and not shouting  # an initial: "T. Rowe Price"
        if shouting or token.raw.isupper():
            return (
                token.raw[:1].isupper()
                and not self._is_english(token.word)
                and token.word not in FINANCE_ABBREVIATIONS
            )
        return token.capitalised

    def _with_namesakes(self, key: tuple[str, ...]) -> tuple[int, ...]:
        """The companies of an exact name, with any larger company whose name only begins
        with it, to ask among: "Graham" is Graham Corp, and Graham Holdings is larger;
        "Apple" is Apple Inc., larger than every "Apple ..." company, and "Coca-Cola" The
        Coca-Cola Company, larger than Coca-Cola Europacific Partners."""
        exact = self._ranked(self._names[key])
        best = self.filers[exact[0]].rank
        larger = [c for c in self._first_words.get(key, ()) if self.filers[c].rank < best]
        return self._ranked({*exact, *larger})

    def _dominant(self, ranked: tuple[int, ...]) -> bool:
        """Whether the first of several companies is among the largest filers and every
        other far down SEC's list."""
        if len(ranked) == 1:
            return True
        best, runner_up = self.filers[ranked[0]].rank, self.filers[ranked[1]].rank
        return best < WELL_KNOWN_RANK and runner_up > FAR_DOWN_FACTOR * (best + 1) + WELL_KNOWN_RANK

    def _by_first_words(self, ciks: set[int]) -> tuple[int, ...] | None:
        ranked = self._ranked(ciks)
        if self._dominant(ranked):
            return ranked[:1]
        return ranked if len(ranked) <= MAX_CANDIDATES else None

    def _ranked(self, ciks: Iterable[int]) -> tuple[int, ...]:
        return tuple(sorted(ciks, key=lambda cik: self.filers[cik].rank))

    def _ordinary(self, word: str) -> bool:
        """A word ordinary sentences use: in the dictionary and not rare ("neogen" and
        "gogo" are in GCIDE, and name only companies), or used every day whatever the
        dictionary holds ("asia", "america")."""
        return (self._is_english(word) and not rarely_used(word)) or everyday(word)

    def _is_english(self, word: str) -> bool:
        """An English word, inflected or not ("cars", "dividends", "priced")."""
        if not word.isalpha():
            return False
        if word in self.english:
            return True
        for ending, base in (
            ("ies", "y"),
            ("es", ""),
            ("s", ""),
            ("ed", ""),
            ("ed", "e"),
            ("ing", ""),
            ("ing", "e"),
        ):
            stem = word[: -len(ending)]
            if word.endswith(ending) and len(stem) >= 3 and stem + base in self.english:
                return True
        return False

    def _ticker_at(self, tokens: list[_Token], at: int, shouting: bool) -> FilerMention | None:
        token = tokens[at]
        cik = self._tickers.get(_ticker_form(token.raw))
        if cik is None:
            return None
        if self._written_as_ticker(tokens, at, shouting):
            return FilerMention(token.raw, (cik,), "ticker")
        return None

    def _written_as_ticker(self, tokens: list[_Token], at: int, shouting: bool) -> bool:
        token = tokens[at]
        if token.dollar or (at > 0 and tokens[at - 1].word in ("ticker", "symbol")):
            return True
        if token.word in FINANCE_ABBREVIATIONS or not (token.acronym or token.raw.islower()):
            # "FCF", "AI"; "Bros", "Taco", "mRNA", "eBay": tickers are written AAPL or aapl.
            return False
        if token.acronym and not shouting:
            # Capitals are how tickers are written, and how abbreviations are: no dictionary
            # tells "the IRS", "an RSI above 70", "WTI slipped", "HODL or sell", "QSR chains"
            # from a ticker, and a list of them never ends. So capitals are a ticker only
            # beside a financial word ("NET revenue", "CMS stock", "YETI shares"), or alone.
            near = tokens[max(0, at - 2) : at] + tokens[at + 1 : at + 3]
            return len(tokens) == 1 or any(t.word in FINANCIAL_WORDS for t in near)
        if at > 0 and tokens[at - 1].word in _DETERMINERS:
            # A ticker is a name, and a name takes no article: "the exp date", "another stim
            # check", "much prem", "a calc" are shorthand for words.
            return False
        word = self._is_english(token.word)
        if not token.opens:
            # Inside a sentence, lower case that a dictionary holds or that English uses is
            # the word it is, however rare or new ("oust a CEO", "still spry", "delivery
            # apps", "eco mode", "dibs on the house"): only what is no English word at all
            # is a ticker there ("how did nvda do", "what is smci's gross margin").
            return not word and rarely_used(token.word)
        # Opening the question, as a search box's subject is written: what no English word
        # could be, of three letters or more (two are abbreviations as often: ip, hd, ev);
        # or what English rarely uses, whatever old dictionaries hold ("gild hiv sales",
        # "anet 2025 revenue guidance").
        if (not word and len(token.word) >= 3) or rarely_used(token.word):
            return True
        # A search-box question opens with what it is about: "bac net interest income",
        # "lulu americas revenue". A word not used every day, first and a word or two
        # before a financial one, is the ticker it also is.
        return not everyday(token.word) and any(
            t.word in FINANCIAL_WORDS for t in tokens[at + 1 : at + 4]
        )


def _ticker_form(text: str) -> str:
    """BRK.B, BRK-B and brk-b are one ticker."""
    return text.upper().replace(".", "-")


# Below this Zipf frequency (about once in ten million words) a lower-case word is read as
# the ticker it also is: "gild" 2.4, "aapl" 2.4; "comp" 3.9 and "imo" 3.7 are everyday.
RARE_ZIPF = 3.0


# From this Zipf frequency (about once in thirty thousand words) a word is everyday: "net"
# 4.8, "group" 5.6; "toro" 3.2 and "hanover" 3.4 are not.
EVERYDAY_ZIPF = 4.5


def everyday(word: str) -> bool:
    return zipf_frequency(word, "en") >= EVERYDAY_ZIPF


def rarely_used(word: str) -> bool:
    """Whether English rarely uses the word (wordfreq's Zipf scale, its bundled lists)."""
    return word.isalpha() and zipf_frequency(word, "en") < RARE_ZIPF


@cache
def english_words() -> frozenset[str]:
    """Ordinary English: the words of Webster's Second and GCIDE, lower case (read once)."""
    from english_words import get_english_words_set

    return frozenset(get_english_words_set(["web2", "gcide"], lower=True, alpha=True))
