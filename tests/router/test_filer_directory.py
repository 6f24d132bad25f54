"""Resolving SEC's filers by name and ticker: an ordinary sentence never names a company;
a ticker that is a word counts only written as a ticker; the longest name wins; a name
that fits several companies alike is given as all of them. The last test asks the
directory set (tests/router/directory_questions_dev.jsonl, written by an outside writer over
SEC's whole directory, ../shared/data/sec) and skips without ../shared."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from services.router.filer_directory import FilerDirectory, FilerMention, english_words
from shared.sec_filers import Filer, filers_from_sec_tickers, read_sec_directory
from tests.helpers import require_shared_data

APPLE, HOSPITALITY, CLOUDFLARE, COSTCO, ALLSTATE, META, META_MATERIALS = (
    320193,
    1418121,
    1477333,
    909832,
    899051,
    1326801,
    1431074,
)
FIRST_A, FIRST_B = 11, 12
TEAM, OIL_DRI, NATHANS, TORO_A, TORO_B, WESSON = 21, 22, 23, 24, 25, 26
HUNT, ROWE, LAUDER, SYSCO, DOW, BP, GILEAD, UFP_I, UFP_T, GLADSTONE = range(31, 41)
AO_SMITH, BANK_OF_AMERICA, CARTERS, CARTER_BANK, TEN, GROUP_1, SP_GLOBAL, TELEVISA = range(51, 59)
CMS_ENERGY, EAGLE_MATERIALS, DELTA, HSBC, BROKERS, NEOGEN, MARAVAI = range(61, 68)
SM_ENERGY, SM_PRIME = 71, 72

SEC_ROWS = {
    "0": {"cik_str": APPLE, "ticker": "AAPL", "title": "Apple Inc."},
    "1": {"cik_str": META, "ticker": "META", "title": "Meta Platforms, Inc."},
    "2": {"cik_str": COSTCO, "ticker": "COST", "title": "COSTCO WHOLESALE CORP /NEW"},
    "3": {"cik_str": CLOUDFLARE, "ticker": "NET", "title": "Cloudflare, Inc."},
    "4": {"cik_str": ALLSTATE, "ticker": "ALL", "title": "ALLSTATE CORP"},
    "5": {"cik_str": HOSPITALITY, "ticker": "APLE", "title": "Apple Hospitality REIT, Inc."},
    "6": {"cik_str": FIRST_A, "ticker": "FSTA", "title": "First Northern Bancorp"},
    "7": {"cik_str": FIRST_B, "ticker": "FSTB", "title": "First Northern Holdings Inc"},
    "7a": {"cik_str": DELTA, "ticker": "DAL", "title": "DELTA AIR LINES, INC."},
    "7b": {"cik_str": HSBC, "ticker": "HSBC", "title": "HSBC HOLDINGS PLC"},
    "7c": {"cik_str": BROKERS, "ticker": "IBKR", "title": "Interactive Brokers Group, Inc."},
    # Far down SEC's list, as the smallest filers are.
    **{
        str(8 + n): {"cik_str": 100 + n, "ticker": f"ZZ{n}", "title": f"Filler {n} Corp"}
        for n in range(4000)
    },
    "4100": {"cik_str": META_MATERIALS, "ticker": "MMAT", "title": "Meta Materials Inc."},
    "4101": {"cik_str": TEAM, "ticker": "TISI", "title": "TEAM INC"},
    "4102": {"cik_str": OIL_DRI, "ticker": "ODC", "title": "OIL DRI CORP OF AMERICA"},
    "4103": {"cik_str": NATHANS, "ticker": "NATH", "title": "NATHANS FAMOUS INC"},
    "4104": {"cik_str": TORO_A, "ticker": "TTC", "title": "TORO CO"},
    "4105": {"cik_str": TORO_B, "ticker": "TORO", "title": "Toro Corp."},
    "4106": {"cik_str": WESSON, "ticker": "SWBI", "title": "SMITH & WESSON BRANDS, INC."},
    "4107": {"cik_str": HUNT, "ticker": "JBHT", "title": "HUNT J B TRANSPORT SERVICES INC"},
    "4108": {"cik_str": ROWE, "ticker": "TROW", "title": "PRICE T ROWE GROUP INC"},
    "4109": {"cik_str": LAUDER, "ticker": "EL", "title": "ESTEE LAUDER COMPANIES INC"},
    "4110": {"cik_str": SYSCO, "ticker": "SYY", "title": "SYSCO CORP"},
    "4111": {"cik_str": DOW, "ticker": "DOW", "title": "DOW INC."},
    "4112": {"cik_str": BP, "ticker": "BP", "title": "BP PLC"},
    "4113": {"cik_str": GILEAD, "ticker": "GILD", "title": "GILEAD SCIENCES, INC."},
    "4114": {"cik_str": UFP_I, "ticker": "UFPI", "title": "UFP INDUSTRIES INC"},
    "4115": {"cik_str": UFP_T, "ticker": "UFPT", "title": "UFP TECHNOLOGIES INC"},
    "4116": {
        "cik_str": GLADSTONE,
        "ticker": "GAIN",
        "title": "GLADSTONE INVESTMENT CORPORATION\\DE",
    },
    "4117": {"cik_str": 41, "ticker": "T", "title": "AT&T INC."},
    "4118": {"cik_str": 42, "ticker": "IMO", "title": "IMPERIAL OIL LTD"},
    "4119": {"cik_str": 43, "ticker": "NPV", "title": "NUVEEN VIRGINIA QUALITY MUNICIPAL FUND"},
    "4120": {"cik_str": AO_SMITH, "ticker": "AOS", "title": "SMITH A O CORP"},
    "4121": {"cik_str": CARTERS, "ticker": "CRI", "title": "CARTERS INC"},
    "4122": {"cik_str": CARTER_BANK, "ticker": "CARE", "title": "Carter Bankshares, Inc."},
    "4123": {"cik_str": TEN, "ticker": "XHLD", "title": "TEN Holdings, Inc."},
    "4124": {"cik_str": GROUP_1, "ticker": "GPI", "title": "GROUP 1 AUTOMOTIVE INC"},
    "4125": {"cik_str": TELEVISA, "ticker": "TV", "title": "GRUPO TELEVISA, S.A.B."},
    "4126": {"cik_str": 44, "ticker": "NLOP", "title": "Net Lease Office Properties"},
    "4127": {"cik_str": 45, "ticker": "NPWR", "title": "NET Power Inc."},
    "4128": {"cik_str": 46, "ticker": "BDC", "title": "BELDEN INC."},
    "4129": {"cik_str": BANK_OF_AMERICA, "ticker": "BAC", "title": "BANK OF AMERICA CORP /DE/"},
    "4130": {"cik_str": SP_GLOBAL, "ticker": "SPGI", "title": "S&P Global Inc."},
    "4131": {"cik_str": CMS_ENERGY, "ticker": "CMS", "title": "CMS ENERGY CORP"},
    "4132": {"cik_str": 47, "ticker": "RSI", "title": "Rush Street Interactive, Inc."},
    "4133": {"cik_str": EAGLE_MATERIALS, "ticker": "EXP", "title": "EAGLE MATERIALS INC"},
    "4134": {"cik_str": NEOGEN, "ticker": "NEOG", "title": "NEOGEN CORP"},
    "4135": {"cik_str": 48, "ticker": "MRNA", "title": "Moderna, Inc."},
    "4136": {"cik_str": MARAVAI, "ticker": "MRVI", "title": "Maravai LifeSciences Holdings, Inc."},
    "4137": {"cik_str": 49, "ticker": "AGIX", "title": "AGI Inc"},
    "4138": {"cik_str": 50, "ticker": "ACU", "title": "ACME UNITED CORP"},
    "4139": {"cik_str": 51, "ticker": "OUST", "title": "Ouster, Inc."},
    "4140": {"cik_str": 52, "ticker": "APPS", "title": "Digital Turbine, Inc."},
    "4141": {"cik_str": 53, "ticker": "SMEGF", "title": "Siemens Energy AG/ADR"},
    "4142": {"cik_str": SM_ENERGY, "ticker": "SM", "title": "SM Energy Co"},
    "4143": {"cik_str": SM_PRIME, "ticker": "SPHXF", "title": "SM Prime Holdings Inc./ADR"},
}


@pytest.fixture(scope="module")
def directory() -> FilerDirectory:
    filers = filers_from_sec_tickers(SEC_ROWS)
    apple = next(f for f in filers if f.cik == APPLE)
    filers = [
        Filer(f.cik, f.name, f.tickers, f.rank, ("Apple Computer Inc",)) if f is apple else f
        for f in filers
    ]
    return FilerDirectory(filers, english_words())


def named(directory: FilerDirectory, question: str) -> list[tuple[int, ...]]:
    return [mention.ciks for mention in directory.mentions(question)]


@pytest.mark.parametrize(
    "question",
    [
        "Is it a good time to buy now?",
        "What does it cost to run all of it?",
        "Are all net figures in the cash flow statement?",
        "How much cash is on the balance sheet, net of debt?",
        "COST OF GOODS SOLD: WHAT IS IT?",
        "imo dividends are overrated",  # chat shorthand, though IMO is a ticker
        "how do I compute npv in a spreadsheet?",
        "Is a 50 bp rate cut a big deal?",  # basis points, though BP is a company
        "Why did the Dow drop 500 points today?",  # the index, though Dow Inc. files
        "Top ten holdings of an S&P 500 index fund",  # TEN Holdings; the index
        "How big is the TV advertising market?",  # everyday capitals: TV is a ticker
        "Net margin versus operating margin: which matters more?",  # an everyday opener
        "Lego Group revenue growth",  # a company finq does not know, then "Group"
        "What's a typical BDC dividend yield?",  # finance shorthand
        # Capitals no dictionary holds are abbreviations as often as tickers: the Medicare
        # agency, not CMS Energy; an indicator, not Rush Street Interactive.
        "What did CMS decide about Medicare payment rates?",
        "Is an RSI above 70 always a sell signal?",
        # A name takes no article: after one, shorthand is a word (the expiry date).
        "Is the exp date the last day I can trade the contract?",
        # Ordinary words opening a longer name finq does not know.
        "Delta Dental premium increases",
        # A legal word after a name no filer has: "Acme" is not then Acme United.
        "Acme Corporation anvil sales",
        # A name that is one acronym is written as abbreviations are.
        "What counts toward AGI for the Roth IRA income limit?",
        # Inside a sentence, lower case a dictionary holds or English uses is that word,
        # however rare (OUST) or new (APPS) it is.
        "Can shareholders oust a CEO on their own?",
        "How do I pay estimated taxes on income from delivery apps?",
        # A legal word ends a name: Siemens AG is not Siemens Energy AG, which it begins.
        "Siemens AG digital industries orders",
    ],
)
def test_an_ordinary_sentence_names_no_company(directory: FilerDirectory, question: str) -> None:
    assert directory.mentions(question) == []


@pytest.mark.parametrize(
    ("question", "cik"),
    [
        ("$NET revenue in 2023", CLOUDFLARE),
        ("What is the ticker NET worth?", CLOUDFLARE),
        ("NET revenue growth last year", CLOUDFLARE),
        ("How did COST stock do this year?", COSTCO),
        ("ALL dividend history", ALLSTATE),
        ("aapl revenue 2023", APPLE),
        ("What was AAPL's gross margin?", APPLE),
        ("CMS stock dividend yield", CMS_ENERGY),
        ("AAPL", APPLE),
        ("exp cement volumes", EAGLE_MATERIALS),
    ],
)
def test_a_ticker_written_as_a_ticker_names_its_company(
    directory: FilerDirectory, question: str, cik: int
) -> None:
    assert named(directory, question) == [(cik,)]


def test_the_longest_name_wins_and_the_short_one_still_names_its_own(
    directory: FilerDirectory,
) -> None:
    assert named(directory, "Apple Hospitality REIT's dividend") == [(HOSPITALITY,)]
    assert named(directory, "Apple Hospitality occupancy") == [(HOSPITALITY,)]
    assert named(directory, "Apple's iPhone revenue") == [(APPLE,)]


def test_a_one_word_name_that_is_an_english_word_needs_its_capital(
    directory: FilerDirectory,
) -> None:
    assert named(directory, "Apple net income") == [(APPLE,)]
    assert named(directory, "how many apple varieties are there?") == []


def test_a_former_name_names_the_company_it_became(directory: FilerDirectory) -> None:
    [mention] = directory.mentions("Apple Computer revenue in 2005")
    assert mention == FilerMention("Apple Computer", (APPLE,), "former_name")


def test_first_words_name_the_one_far_larger_company_or_all_that_share_them(
    directory: FilerDirectory,
) -> None:
    assert named(directory, "Meta revenue in 2024") == [(META,)]
    assert named(directory, "Delta fuel costs per seat mile") == [(DELTA,)]
    # An acronym alone begins a well-known company's name; so do its words in lower case.
    assert named(directory, "How much did HSBC earn in Asia?") == [(HSBC,)]
    assert named(directory, "interactive brokers daily average trades") == [(BROKERS,)]


def test_a_word_old_dictionaries_hold_but_english_rarely_uses_is_a_name(
    directory: FilerDirectory,
) -> None:
    assert named(directory, "Neogen food safety revenue growth") == [(NEOGEN,)]


def test_a_word_in_mixed_case_is_a_term_not_a_ticker(directory: FilerDirectory) -> None:
    assert named(directory, "Maravai LifeSciences mRNA reagent sales") == [(MARAVAI,)]
    [mention] = directory.mentions("First Northern net income")
    assert mention.ambiguous and set(mention.ciks) == {FIRST_A, FIRST_B}


@pytest.mark.parametrize(
    "question",
    ["Team, can we get the earnings calendar?", "Nice. Team totals next, please."],
)
def test_a_sentence_s_first_word_names_only_a_company_everyone_knows_by_it(
    directory: FilerDirectory, question: str
) -> None:
    assert directory.mentions(question) == []
    assert named(directory, "Apple revenue in 2023") == [(APPLE,)]


def test_a_legal_word_or_a_possessive_makes_words_a_name(directory: FilerDirectory) -> None:
    assert named(directory, "Team Inc. backlog") == [(TEAM,)]
    assert named(directory, "Team's backlog") == [(TEAM,)]
    assert named(directory, "Nathan's Famous licensing income") == [(NATHANS,)]


def test_small_words_and_legal_words_inside_a_name_are_matched_as_written(
    directory: FilerDirectory,
) -> None:
    assert named(directory, "Smith & Wesson handgun sales") == [(WESSON,)]
    assert named(directory, "Oil-Dri Corporation of America cat litter sales") == [(OIL_DRI,)]


def test_one_word_two_companies_share_is_asked_about_when_written_as_a_company(
    directory: FilerDirectory,
) -> None:
    [mention] = directory.mentions("Toro revenue for the last fiscal year")
    assert mention.ambiguous and set(mention.ciks) == {TORO_A, TORO_B}
    assert directory.mentions("the toro of the bullfight") == []


def test_two_letter_lower_case_words_are_abbreviations_not_tickers(
    directory: FilerDirectory,
) -> None:
    assert directory.mentions("what is the ev to ebitda ratio?") == []


def test_a_lower_case_word_english_rarely_uses_is_read_as_its_ticker(
    directory: FilerDirectory,
) -> None:
    # "gild" is in Webster's Second, yet nobody writes it before "hiv sales".
    assert named(directory, "gild hiv sales growth") == [(GILEAD,)]
    assert directory.mentions("cost of revenue and net income") == []


def test_a_search_box_question_opens_with_the_ticker_it_is_about(
    directory: FilerDirectory,
) -> None:
    # "bac" is a word (a ferry, a diploma), just not an everyday one.
    assert named(directory, "bac net interest income outlook") == [(BANK_OF_AMERICA,)]


def test_inside_a_sentence_lower_case_that_is_no_english_word_is_a_ticker(
    directory: FilerDirectory,
) -> None:
    assert named(directory, "how did aapl do last quarter") == [(APPLE,)]
    assert named(directory, "what is gild's hiv pipeline worth") == []  # a word, mid-sentence


def test_a_ticker_written_as_one_says_which_of_the_names_it_begins_is_meant(
    directory: FilerDirectory,
) -> None:
    [mention] = directory.mentions("How big is SM's Uinta Basin acreage?")  # begins two
    assert mention.ambiguous and set(mention.ciks) == {SM_ENERGY, SM_PRIME}
    assert named(directory, "SM stock Uinta Basin production") == [(SM_ENERGY,)]


def test_a_name_as_written_comes_before_the_start_of_another(directory: FilerDirectory) -> None:
    assert named(directory, "Carter's wholesale sales") == [(CARTERS,)]


def test_names_sec_files_surname_first_are_read_as_people_write_them(
    directory: FilerDirectory,
) -> None:
    assert named(directory, "J.B. Hunt intermodal loads") == [(HUNT,)]
    assert named(directory, "T. Rowe Price net client outflows") == [(ROWE,)]
    assert named(directory, "A.O. Smith water heater volumes") == [(AO_SMITH,)]


def test_accents_capitals_and_state_marks_do_not_hide_a_name(directory: FilerDirectory) -> None:
    assert named(directory, "Estée Lauder sales in China") == [(LAUDER,)]
    assert named(directory, "ALSO, WHAT IS SYSCO'S OPERATING INCOME?") == [(SYSCO,)]
    assert named(directory, "Gladstone Investment distributions") == [(GLADSTONE,)]
    assert named(directory, "Dow's revenue in 2024") == [(DOW,)]


def test_an_acronym_that_begins_two_names_is_asked_about(directory: FilerDirectory) -> None:
    [mention] = directory.mentions("UFP net sales last year")
    assert mention.ambiguous and set(mention.ciks) == {UFP_I, UFP_T}


def test_a_ticker_after_the_word_ticker_is_never_an_initial(directory: FilerDirectory) -> None:
    assert named(directory, "ticker T revenue for fiscal 2024") == [(41,)]


def test_share_classes_are_one_company() -> None:
    rows = {
        "0": {"cik_str": 1652044, "ticker": "GOOGL", "title": "Alphabet Inc."},
        "1": {"cik_str": 1652044, "ticker": "GOOG", "title": "Alphabet Inc."},
    }
    [alphabet] = filers_from_sec_tickers(rows)
    assert alphabet.tickers == ("GOOGL", "GOOG") and alphabet.rank == 0


# --- the directory sets, over SEC's whole directory ---------------------------------------

# Each written by an outside writer who read neither finq's code nor this resolver
# (directory_questions.md). The development sets are what the rules were fixed against
# (each was held out once: the second 263 of 280 then; the third 279 of 306, with 8
# ordinary sentences read as companies; the fourth 291 of 311, with 9).
HERE = Path(__file__).parent
SETS = [
    (HERE / "directory_questions_dev.jsonl", 0.98),
    (HERE / "directory_questions_dev2.jsonl", 0.98),
    (HERE / "directory_questions_heldout2.jsonl", 0.98),
    (HERE / "directory_questions_heldout3.jsonl", 0.98),
]


def right(mentions: list[FilerMention], expect: dict[str, Any]) -> bool:
    if expect.get("none"):
        return not mentions
    if "cik" in expect:
        return [m.ciks for m in mentions] == [(expect["cik"],)]
    wanted = set(expect["ambiguous"])
    return len(mentions) == 1 and mentions[0].ambiguous and wanted <= set(mentions[0].ciks)


@pytest.fixture(scope="module")
def sec_directory() -> FilerDirectory:
    sec = require_shared_data("sec")
    return FilerDirectory(
        read_sec_directory(sec / "company_tickers.json", sec / "submissions"), english_words()
    )


def asked(directory: FilerDirectory, questions: Path) -> tuple[int, list[tuple[Any, ...]]]:
    """How many questions the set holds, and each one resolved wrong with what it got."""
    rows = [json.loads(line) for line in questions.read_text().splitlines() if line.strip()]
    wrong = []
    for row in rows:
        mentions = directory.mentions(row["question"])
        if not right(mentions, row["expect"]):
            wrong.append((row["category"], row["question"], row["expect"], mentions))
    print(
        f"{questions.name}: {len(rows) - len(wrong)} of {len(rows)} right; "
        f"wrong by category: {Counter(category for category, *_ in wrong)}"
    )
    return len(rows), wrong


@pytest.mark.parametrize(("questions", "level"), SETS, ids=[path.stem for path, _ in SETS])
def test_a_directory_set_resolves_right_and_no_ordinary_sentence_names_a_company(
    sec_directory: FilerDirectory, questions: Path, level: float
) -> None:
    count, wrong = asked(sec_directory, questions)
    report = "\n".join(map(str, wrong))
    # An ordinary sentence read as naming a company is the error that must never happen.
    assert not [w for w in wrong if w[2].get("none") and w[3]], report
    assert count >= 200
    assert count - len(wrong) >= level * count, report


# The fifth to eighth sets miss that bar (docs/routing.md): first asked, 283 of 320 with 15
# ordinary sentences read as companies, 275 of 322 with 20, 287 of 322 with 11, and 293 of
# 322 with 3. Each holds what it reached once its failures had shaped the rules (the
# eighth, what it was first asked), so a change that loses ground there is seen.
BELOW_THE_BAR = [
    (HERE / "directory_questions_heldout4.jsonl", 299, 1),
    (HERE / "directory_questions_heldout5.jsonl", 295, 6),
    (HERE / "directory_questions_heldout6.jsonl", 297, 4),
    (HERE / "directory_questions_heldout7.jsonl", 293, 3),
]


@pytest.mark.parametrize(
    ("questions", "least_right", "most_invented"),
    BELOW_THE_BAR,
    ids=[path.stem for path, *_ in BELOW_THE_BAR],
)
def test_a_set_below_the_bar_loses_no_ground(
    sec_directory: FilerDirectory, questions: Path, least_right: int, most_invented: int
) -> None:
    count, wrong = asked(sec_directory, questions)
    report = "\n".join(map(str, wrong))
    assert len([w for w in wrong if w[2].get("none") and w[3]]) <= most_invented, report
    assert count - len(wrong) >= least_right, report
