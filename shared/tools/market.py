"""Daily prices and the SEC filings index."""

from __future__ import annotations

from datetime import date

from pydantic import Field, field_validator, model_validator

from shared.tools.spec import (
    FiscalYear,
    Symbol,
    ToolArguments,
    ToolSpec,
    forms_as_sec_spells_them,
)

GET_PRICES = "get_prices"
GET_RECENT_FILINGS = "get_recent_filings"


class GetPricesArgs(ToolArguments):
    """Daily closes of one company between two days, both included.

    With neither day, the last 30 trading days held; with only `end`, the 30 trading
    days up to it; with only `start`, everything from it to the last day held.
    """

    symbol: Symbol
    start: date | None = None
    end: date | None = None

    @model_validator(mode="after")
    def start_is_not_after_end(self) -> GetPricesArgs:
        if self.start is not None and self.end is not None and self.start > self.end:
            raise ValueError(f"start {self.start} is after end {self.end}")
        return self


GET_PRICES_SPEC = ToolSpec(
    name=GET_PRICES,
    arguments=GetPricesArgs,
    runner="services.tools.prices:run",
    intents=("price",),
)


class GetRecentFilingsArgs(ToolArguments):
    """A company's SEC filings, newest first.

    `forms` names SEC form types ("10-K", "10-Q", "8-K", "DEF 14A", "10-K/A"); an
    amendment is its own form, so "10-K" does not bring 10-K/As. `fiscal_year` selects
    periodic reports (10-K, 10-Q, 20-F, 40-F) by the fiscal year they cover: other forms
    have no fiscal year and never match it.
    """

    symbol: Symbol
    forms: list[str] | None = Field(default=None, min_length=1, max_length=20)
    fiscal_year: FiscalYear | None = None
    limit: int = Field(default=10, ge=1, le=100)

    @field_validator("forms")
    @classmethod
    def forms_are_spelled_as_sec_does(cls, forms: list[str] | None) -> list[str] | None:
        return forms_as_sec_spells_them(forms)


GET_RECENT_FILINGS_SPEC = ToolSpec(
    name=GET_RECENT_FILINGS,
    arguments=GetRecentFilingsArgs,
    runner="services.tools.filings:run",
    intents=("filings",),
)
