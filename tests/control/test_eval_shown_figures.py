"""`finq eval` counts a figure when the user is shown it, in the answer's text or in its
table; a figure seen only in how another was computed answers nothing."""

from __future__ import annotations

from typing import Any

from services.control.evaluation import GoldenQuestion, Outcome, score
from services.control.stated_figures import shown_text

NVIDIA_2023 = GoldenQuestion(
    id="t2",
    question="NVIDIA revenue fiscal 2021 to 2025",
    intent="metric_trend",
    expect="figures",
    tools=["get_financial_metrics"],
    figures=[{"symbol": "NVDA", "metric": "revenue", "period": "FY2023", "value": 26_974e6}],
)
LEAD = "NVIDIA's revenue rose from $16.7 billion in fiscal 2021 to $130.5 billion in fiscal 2025."


def answered(table_cells: list[str | None], workings: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "answer": LEAD,
        "needs_clarification": False,
        "facts": [{"symbol": "NVDA", "metric": "revenue", "period": "FY2023", "value": 26_974e6}],
        "validation": {"passed": True, "severity": "none", "issues": []},
        "route": {"intent": "metric_trend", "tool_calls": [{"tool": "get_financial_metrics"}]},
        "table": {
            "caption": "NVIDIA, fiscal 2021–2025",
            "columns": ["Fiscal year", "Revenue"],
            "rows": [{"label": "FY2023", "cells": table_cells}],
        },
        "workings": workings,
    }


def test_a_figure_in_the_table_is_stated() -> None:
    result = score(Outcome(NVIDIA_2023, answered(["$27.0 billion"], []), 10.0))
    assert result.answer, result.problems


def test_a_figure_only_in_a_working_is_not_stated() -> None:
    working = {
        "figure": "NVIDIA's revenue growth, fiscal 2024",
        "text": "(revenue $60.9 billion / fiscal 2023 revenue $27.0 billion − 1) × 100 = 125.9%",
        "source_id": "derived:NVDA:revenue_growth:FY2024",
    }
    result = score(Outcome(NVIDIA_2023, answered([None], [working]), 10.0))
    assert not result.answer
    assert "figures not stated in the answer: NVDA revenue FY2023" in " ".join(result.problems)


def test_the_shown_text_holds_the_lead_then_each_row_of_the_table() -> None:
    text = shown_text(answered(["$27.0 billion"], []))
    assert text.splitlines() == [
        LEAD,
        "NVIDIA, fiscal 2021–2025",
        "Fiscal year; Revenue",
        "FY2023: $27.0 billion",
    ]
    assert shown_text({"answer": "No table."}) == "No table."
