"""An answer's table and the workings of its computed figures are shown to the user, so the
validator checks every number in them as it checks the prose: a tampered cell, a right
figure in the wrong row or a tampered working fails, and a template's is repaired (patched,
else emptied or dropped) the way a wrong sentence is; `numbers_checked` counts them all."""

from __future__ import annotations

from services.answerer.drafting import draft_answer
from services.validator.checking import check_answer
from services.validator.finalizing import repair_template, validate_draft
from shared.contracts.answers import AnswerDrafted, AnswerTable, AnswerTableRow
from tests.answerer.glance_facts import nvidia_completed, nvidia_facts, nvidia_sources


def drafted() -> AnswerDrafted:
    return draft_answer(nvidia_completed())


def with_cell(draft: AnswerDrafted, row: int, cell: int, text: str | None) -> AnswerDrafted:
    assert draft.table is not None
    rows = [AnswerTableRow(label=r.label, cells=list(r.cells)) for r in draft.table.rows]
    rows[row].cells[cell] = text
    table = draft.table.model_copy(update={"rows": rows})
    return draft.model_copy(update={"table": table})


def test_a_right_table_passes_and_its_cells_are_counted() -> None:
    draft = drafted()
    assert draft.table is not None
    cells = sum(len(row.cells) for row in draft.table.rows)
    alone = check_answer(draft.answer, draft.facts, draft.citations, nvidia_sources())
    with_table = check_answer(
        draft.answer, draft.facts, draft.citations, nvidia_sources(), table=draft.table
    )
    assert with_table.passed, with_table.issues
    assert (alone.numbers_checked, cells) == (6, 20)
    assert with_table.numbers_checked == alone.numbers_checked + cells
    # Each growth's working shows five numbers: two amounts, the 1 and the 100, the result.
    validation = validate_draft(draft).validation
    assert validation.passed
    assert validation.numbers_checked == 6 + 20 + 5 * len(draft.workings)


def test_a_tampered_cell_fails_validation() -> None:
    draft = with_cell(drafted(), row=2, cell=0, text="$31.0 billion")  # FY2023 revenue
    validation = validate_draft(draft).validation
    assert not validation.passed
    [issue] = validation.issues
    assert issue.kind == "number" and issue.text == "$31.0 billion"
    assert issue.severity == "high"
    assert "in fiscal 2023" in issue.message and "in the table" in issue.message


def test_a_right_figure_in_the_wrong_row_fails() -> None:
    # FY2022's revenue written in FY2023's row: right value, wrong year.
    draft = with_cell(drafted(), row=2, cell=0, text="$26.9 billion")
    validation = check_answer(draft.answer, draft.facts, [], nvidia_sources(), table=draft.table)
    assert not validation.passed
    assert "matches NVIDIA's Revenue in fiscal 2022" in validation.issues[0].message


def test_the_caption_names_the_company_of_every_cell_but_not_their_years() -> None:
    facts = nvidia_facts()
    table = AnswerTable(
        caption="NVIDIA, fiscal 2021–2025",
        columns=["Fiscal year", "Revenue"],
        rows=[AnswerTableRow(label="FY2025", cells=["$16.7 billion"])],  # fiscal 2021's
    )
    assert not check_answer("", facts, [], nvidia_sources(), table=table).passed
    # A year the figures are not of, in the caption, is an unknown year like any other.
    table = table.model_copy(update={"caption": "NVIDIA, fiscal 2012–2025", "rows": []})
    [issue] = check_answer("", facts, [], nvidia_sources(), table=table).issues
    assert issue.kind == "year" and issue.text == "2012"


def test_a_cell_past_the_header_is_checked_too() -> None:
    draft = drafted()
    assert draft.table is not None
    rows = [*draft.table.rows]
    rows[0] = AnswerTableRow(label="FY2021", cells=[*rows[0].cells, "$99.9 billion"])
    table = draft.table.model_copy(update={"rows": rows})
    assert not check_answer(draft.answer, draft.facts, [], nvidia_sources(), table=table).passed


def test_a_tampered_working_fails_validation() -> None:
    draft = drafted()
    workings = [*draft.workings]
    workings[1] = workings[1].model_copy(
        update={"text": workings[1].text.replace("$16.7 billion", "$15.7 billion")}
    )
    validation = validate_draft(draft.model_copy(update={"workings": workings})).validation
    assert not validation.passed
    assert validation.issues[0].text == "$15.7 billion"
    assert "in how it was computed" in validation.issues[0].message


def test_a_templates_wrong_cell_is_patched_in_its_columns_scale() -> None:
    draft = with_cell(drafted(), row=2, cell=0, text="$31.0 billion")
    repaired = repair_template(draft, attempt=0)
    assert repaired.validation.passed, repaired.validation.issues
    assert repaired.table is not None
    assert repaired.table.rows[2].cells[0] == "$27.0 billion"
    assert repaired.validation.repairs == [
        "patched $31.0 billion to $27.0 billion (NVIDIA's revenue for FY2023) in the table"
    ]


def test_a_cell_no_fact_can_patch_is_emptied_and_the_answer_says_so() -> None:
    # A year no fetched figure is of: nothing to patch it with.
    original = drafted().table
    draft = with_cell(drafted(), row=0, cell=0, text="$16.7 billion (FY2031)")
    repaired = repair_template(draft, attempt=0)
    assert repaired.validation.passed, repaired.validation.issues
    assert repaired.table is not None and original is not None
    assert repaired.table.rows[0].cells == [None, *original.rows[0].cells[1:]]
    assert repaired.table.rows[1:] == original.rows[1:]
    assert repaired.answer.endswith("were left out of the table.")
    assert repaired.validation.repairs == [
        "withheld from the table: FY2021, Revenue: $16.7 billion (FY2031)"
    ]


def test_a_templates_wrong_working_is_dropped_when_no_one_figure_is_meant() -> None:
    # Two years' revenue stand in a growth's working: which one was meant cannot be told.
    draft = drafted()
    workings = [*draft.workings]
    workings[1] = workings[1].model_copy(
        update={"text": workings[1].text.replace("$16.7 billion", "$15.7 billion")}
    )
    repaired = repair_template(draft.model_copy(update={"workings": workings}), attempt=0)
    assert repaired.validation.passed, repaired.validation.issues
    assert repaired.workings == [w for n, w in enumerate(draft.workings) if n != 1]
    assert repaired.table == draft.table and repaired.answer == draft.answer
    [withheld] = repaired.validation.repairs
    assert withheld.startswith("withheld how it was computed: NVIDIA's revenue growth, fiscal 2022")
