"""`finq ask` on a terminal: the lead, the table drawn with rich under it (figures right
aligned, an empty cell as "—"), how each computed figure was reached, the sources with
their brackets intact and the verdict."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from services.answerer.drafting import draft_answer
from services.control.answer_rendering import render_answer
from services.validator.finalizing import validate_draft
from tests.answerer.glance_facts import nvidia_completed


def rendered(data: dict[str, Any]) -> str:
    out = io.StringIO()
    render_answer(data, Console(file=out, width=120, color_system=None))
    return out.getvalue()


def nvidia_body() -> dict[str, Any]:
    body = validate_draft(draft_answer(nvidia_completed())).model_dump(mode="json")
    body["trace_id"] = "0" * 32
    return body


def test_a_multi_year_answer_is_printed_as_its_lead_a_table_and_its_workings() -> None:
    text = rendered(nvidia_body())
    lines = text.splitlines()
    assert lines[0].startswith("NVIDIA's revenue rose from $16.7 billion in fiscal 2021")
    assert "NVIDIA, fiscal 2021–2025" in text
    header = next(line for line in lines if "Fiscal year" in line)
    assert header.index("Revenue") < header.index("Net income growth")
    row = next(line for line in lines if "FY2024" in line)
    assert all(cell in row for cell in ("$60.9 billion", "125.9%", "$29.8 billion", "581.3%"))
    assert row.index("$60.9 billion") < row.index("581.3%")
    assert "How it was computed:" in lines
    assert (
        "  NVIDIA's revenue growth, fiscal 2022: (revenue $26.9 billion / fiscal 2021 revenue "
        "$16.7 billion − 1) × 100 = 61.4%"
    ) in lines
    assert "  [1] NVIDIA 10-K FY2021, accession 0001045810-21-000010" in lines
    assert lines[-1] == f"  validated; trace {'0' * 32}"


def test_an_empty_cell_and_bracketed_text_are_shown_as_they_are() -> None:
    body = {
        "answer": "Apple's revenue [1] is in the table.",
        "table": {
            "caption": "Apple [FY]",
            "columns": ["Fiscal year", "Revenue"],
            "rows": [{"label": "FY2023", "cells": [None]}],
        },
        "citations": [{"label": "Apple 10-K [2023]", "url": None}],
        "validation": {"passed": False, "severity": "high"},
    }
    text = rendered(body)
    assert "Apple's revenue [1] is in the table." in text
    assert "Apple [FY]" in text and "—" in text
    assert "  [1] Apple 10-K [2023]" in text
    assert "NOT validated (high)" in text
    assert "How it was computed" not in text


def test_an_answer_without_a_table_is_its_text_sources_and_verdict() -> None:
    said = "Apple's revenue in fiscal 2023 was $383.3 billion."
    text = rendered({"answer": said, "citations": []})
    assert text.splitlines()[0] == said
    assert "Fiscal year" not in text
