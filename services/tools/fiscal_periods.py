"""How a fiscal period is labelled on a fact: "FY2023", "Q2 FY2024", "TTM to Q1 FY2026"."""

from __future__ import annotations


def period_label(period_type: str, fiscal_year: int, fiscal_quarter: int) -> str:
    if period_type == "annual":
        return f"FY{fiscal_year}"
    if period_type == "ttm":
        return f"TTM to Q{fiscal_quarter} FY{fiscal_year}"
    return f"Q{fiscal_quarter} FY{fiscal_year}"
