"""The bundled glossary: a block for every catalog metric, and short markdown explainers
of investing terms, parsed into documents the ingest can index offline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.ingest.glossary import (
    GLOSSARY_DIR,
    METRIC_GLOSSARY_TITLE,
    GlossaryFileError,
    explainer_documents,
    glossary_documents,
    metric_glossary,
    parse_explainer,
)
from shared.formula_words import formula_in_words, in_words
from shared.metric_catalog import CATALOG, Metric, mid_sentence

EXPLAINER_FILES = sorted(GLOSSARY_DIR.glob("*.md"))
BLOCKS_BY_HEADING = {block.heading: block for block in metric_glossary().blocks}

# Names of SEC forms and retirement plans carry digits without being figures.
_FORM_NAMES = re.compile(r"\b(?:10-K|10-Q|8-K|20-F|6-K|Form 4|401\(k\))", re.IGNORECASE)
# What a made-up statistic looks like: an amount of money, a percentage, a decimal, or
# any number of two digits or more (a year, a dollar limit, an age, a count of days).
_FIGURE = re.compile(r"[$€£]\s?\d|\d\s?(?:%|percent\b)|\d[.,]\d|(?<![\w-])\d{2,}(?![\w-])")


def _metric_block_text(metric: Metric) -> str:
    block = BLOCKS_BY_HEADING.get(metric.label)
    assert block is not None, f"no glossary block for {metric.id}"
    return block.text


def test_every_catalog_metric_has_one_block_headed_by_its_label() -> None:
    document = metric_glossary()
    assert document.title == METRIC_GLOSSARY_TITLE
    assert [block.heading for block in document.blocks] == [metric.label for metric in CATALOG]
    for metric, block in zip(CATALOG, document.blocks, strict=True):
        assert block.kind == "text"
        assert block.text.startswith(f"## {metric.label}\n"), metric.id


@pytest.mark.parametrize("metric", CATALOG, ids=lambda metric: metric.id)
def test_every_metric_block_gives_its_description_unit_and_category(metric: Metric) -> None:
    text = _metric_block_text(metric)
    assert f"{metric.label} is {mid_sentence(in_words(metric.description))}" in text
    assert f"Category: {metric.category.replace('_', ' ')}." in text
    assert "Unit: " in text
    for alias in metric.aliases:
        assert alias in text


@pytest.mark.parametrize("metric", [m for m in CATALOG if m.derived], ids=lambda metric: metric.id)
def test_every_derived_metric_block_gives_its_formula_in_words(metric: Metric) -> None:
    assert metric.formula is not None
    text = _metric_block_text(metric)
    assert f"Formula: {formula_in_words(metric.formula)}." in text
    # In words, not the catalog's identifiers.
    assert "_" not in text.split("Formula: ")[1].split("\n")[0]


def test_reported_metric_blocks_say_they_are_read_from_filings() -> None:
    for metric in CATALOG:
        if not metric.derived:
            assert "read from the company's filings" in _metric_block_text(metric), metric.id


def test_free_cash_flow_is_defined_in_words_with_its_formula() -> None:
    text = BLOCKS_BY_HEADING["Free cash flow"].text
    assert "operating cash flow minus capital expenditures" in text
    assert "Formula: operating cash flow − capital expenditures." in text
    assert "fcf" in text
    assert "Unit: US dollars." in text


def test_gross_margin_reads_as_a_percentage_of_revenue() -> None:
    text = BLOCKS_BY_HEADING["Gross margin"].text
    assert "Formula: gross profit ÷ revenue, in percent." in text
    assert "Unit: percent." in text
    assert "Category: profitability." in text


def test_the_glossary_folder_holds_the_explainers() -> None:
    assert len(EXPLAINER_FILES) >= 10
    assert len(explainer_documents()) == len(EXPLAINER_FILES)


@pytest.mark.parametrize("path", EXPLAINER_FILES, ids=lambda path: path.stem)
def test_each_explainer_has_a_title_and_at_least_two_sections(path: Path) -> None:
    first_line = path.read_text(encoding="utf-8").splitlines()[0]
    document = parse_explainer(path)
    assert first_line == f"# {document.title}"
    assert len(document.blocks) >= 2
    for block in document.blocks:
        assert block.heading
        assert block.text.startswith(f"## {block.heading}\n")


@pytest.mark.parametrize("path", EXPLAINER_FILES, ids=lambda path: path.stem)
def test_each_explainer_is_a_short_read(path: Path) -> None:
    words = len(path.read_text(encoding="utf-8").split())
    assert 150 <= words <= 400, words


def test_the_explainers_cover_the_terms_users_ask_about() -> None:
    text = "\n".join(
        block.text.lower() for document in explainer_documents() for block in document.blocks
    )
    for term in (
        "roth ira",
        "traditional ira",
        "etf",
        "mutual fund",
        "expense ratio",
        "rebalancing",
        "dividend yield",
        "payout ratio",
        "ex-dividend date",
        "trailing p/e",
        "forward p/e",
        "diversification",
        "index fund",
        "compound",
        "dollar-cost averaging",
        "duration",
        "market cap",
        "10-k",
        "10-q",
        "8-k",
        "fiscal year",
        "basic eps",
        "diluted eps",
    ):
        assert term in text, term


def test_a_roth_ira_explainer_mentions_tax_free_qualified_withdrawals() -> None:
    roth = [document for document in explainer_documents() if "Roth IRA" in document.title]
    assert len(roth) == 1
    text = " ".join(block.text for block in roth[0].blocks)
    assert "qualified withdrawals are tax-free" in text
    assert "traditional IRA" in text


def test_every_glossary_document_is_markdown_from_the_finq_glossary() -> None:
    documents = glossary_documents()
    assert documents[0].title == METRIC_GLOSSARY_TITLE
    assert len(documents) == 1 + len(EXPLAINER_FILES)
    for document in documents:
        assert document.doc_type == "md"
        assert document.source_name == "finq glossary"
        assert document.title.strip()


def test_no_glossary_block_is_empty() -> None:
    for document in glossary_documents():
        for block in document.blocks:
            body = block.text.split("\n", 1)[1] if block.text.startswith("## ") else block.text
            assert body.strip(), f"{document.title}: {block.heading}"


def test_glossary_texts_quote_no_statistics() -> None:
    for document in glossary_documents():
        for block in document.blocks:
            figures = _FIGURE.findall(_FORM_NAMES.sub("", block.text))
            assert not figures, f"{document.title}: {block.heading}: {figures}"


def test_the_statistics_check_catches_the_figures_it_is_for() -> None:
    for text in ("a limit of $7,000", "about 7% a year", "returns of 4.5", "in 2024", "at 73"):
        assert _FIGURE.search(text), text
    for text in ("the 10-K and the 8-K", "Form 4", "three years", "FY2017"):
        assert not _FIGURE.search(_FORM_NAMES.sub("", text)), text


def test_text_before_the_first_section_is_kept_under_the_title(tmp_path: Path) -> None:
    path = tmp_path / "term.md"
    path.write_text("# A term\n\nAn opening line.\n\n## More\n\nDetail.\n", encoding="utf-8")
    document = parse_explainer(path)
    assert document.title == "A term"
    assert [(block.heading, block.text) for block in document.blocks] == [
        ("A term", "An opening line."),
        ("More", "## More\n\nDetail."),
    ]


def test_an_explainer_that_does_not_open_with_its_title_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "untitled.md"
    path.write_text("## Section\n\nText.\n", encoding="utf-8")
    with pytest.raises(GlossaryFileError, match="text before the '# ' title line"):
        parse_explainer(path)


def test_an_empty_explainer_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "blank.md"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(GlossaryFileError, match="no '# ' title line"):
        parse_explainer(path)


def test_an_explainer_section_without_text_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "hollow.md"
    path.write_text("# Hollow\n\n## Empty\n\n## Full\n\nText.\n", encoding="utf-8")
    with pytest.raises(GlossaryFileError, match="Empty"):
        parse_explainer(path)
