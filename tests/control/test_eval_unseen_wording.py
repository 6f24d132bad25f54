"""The held-out and outside questions stay unseen by the code: no run of five consecutive
words of one of them stands anywhere in a .py file under services/ or shared/, in code,
string or comment. A rule, an alias or an example copied from such a question would score
the question by having read it, and its split would flatter.

Both sides are read the same way: lowercased, every \\w+ token a word, everything else
(punctuation, spacing, line breaks) a gap between words.

The one text both may share is the metric catalog's own (labels, aliases, descriptions):
its writers were given the catalog, and a question may name a figure by its catalog name
("net cash used in investing activities"). A run counts as the catalog's only when it
stands whole inside one catalog text."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from services.control.document_eval import load_document_questions
from services.control.eval_splits import DOCUMENT_ONLY_SPLITS
from services.control.evaluation import load_split
from services.ingest.statement_metrics import STATEMENT_LABELS
from shared.metric_catalog import CATALOG

ROOT = Path(__file__).resolve().parents[2]
CODE_FOLDERS = ("services", "shared")
RUN = 5
UNSEEN_SPLITS = ("heldout", "outside")
_WORD = re.compile(r"\w+")

Run = tuple[str, ...]


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def runs(text: str) -> set[Run]:
    found = words(text)
    return {tuple(found[i : i + RUN]) for i in range(len(found) - RUN + 1)}


@cache
def code_runs() -> dict[Run, str]:
    """Every five-word run of the code, with the first file it stands in (built once)."""
    seen: dict[Run, str] = {}
    for folder in CODE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            for run in runs(path.read_text(encoding="utf-8")):
                seen.setdefault(run, name)
    return seen


@cache
def catalog_runs() -> frozenset[Run]:
    """Every five-word run inside one of the catalog's labels, aliases or descriptions, or
    inside a statement line's label as filings print it (STATEMENT_LABELS): the words of
    the statements themselves, which a question may use as any filing does."""
    texts = [
        text for metric in CATALOG for text in (metric.label, metric.description, *metric.aliases)
    ]
    texts += [label for labels in STATEMENT_LABELS.values() for label in labels]
    return frozenset(run for text in texts for run in runs(text))


def where(run: Run, name: str) -> str:
    """ "file:line" of the run's first stand in the file, for a reader to find it."""
    text = (ROOT / name).read_text(encoding="utf-8")
    found = re.search(r"\W+".join(run), text, re.IGNORECASE)
    return f"{name}:{text.count(chr(10), 0, found.start()) + 1}" if found else name


def test_reading_turns_code_and_questions_into_the_same_words() -> None:
    code = 'return f"{possessive(company)} net-income, FOR fiscal_2023"  # why: "it\'s"'
    assert words(code) == [
        "return", "f", "possessive", "company", "net", "income", "for", "fiscal_2023",
        "why", "it", "s",
    ]  # fmt: skip
    assert ("possessive", "company", "net", "income", "for") in runs(code)


def test_the_code_is_read_whole() -> None:
    # Both folders are read, and nothing beside them: tests quote questions on purpose.
    files = set(code_runs().values())
    assert any(name.startswith("services/router/") for name in files)
    assert any(name.startswith("shared/") for name in files)
    assert not any(name.startswith("tests/") for name in files)


def unseen_questions() -> list[tuple[str, str, str]]:
    """(split, id, question) of every question the code must not have read: the golden
    questions' held-out and outside splits, and the document questions' (answers from
    filings, services/control/document_questions*.jsonl)."""
    golden = [(q.split, q.id, q.question) for s in UNSEEN_SPLITS for q in load_split(s)]
    documents = [
        (f"documents {q.split}", q.id, q.question)
        for q in load_document_questions()
        if q.split in (*UNSEEN_SPLITS, *DOCUMENT_ONLY_SPLITS)
    ]
    return golden + documents


def test_no_five_word_run_of_a_heldout_or_outside_question_is_in_the_code() -> None:
    code = code_runs()
    hits = [
        f"{split} {id_}: {' '.join(run)!r} in {where(run, code[run])}"
        for split, id_, question in unseen_questions()
        for run in sorted(runs(question))
        if run in code and run not in catalog_runs()
    ]
    assert not hits, f"{len(hits)} runs of unseen questions stand in the code:\n" + "\n".join(hits)


def test_only_runs_inside_the_catalogs_own_texts_are_shared() -> None:
    # A catalog name is shared knowledge; the same words in a rule or a comment are not.
    assert ("net", "cash", "used", "in", "investing") in catalog_runs()
    assert ("how", "much", "cash", "did", "apple") not in catalog_runs()
