"""Passages of filings, the glossary and users' uploads."""

from __future__ import annotations

from datetime import date

from pydantic import Field, field_validator

from shared.tools.spec import (
    FiscalYear,
    Symbol,
    ToolArguments,
    ToolSpec,
    forms_as_sec_spells_them,
)

SEARCH_DOCUMENTS = "search_documents"

# Document collections search_documents knows by name: SEC filings, the team-written
# glossary of metrics and investing basics, course material, and users' uploads.
FILINGS_COLLECTION = "filings"
GLOSSARY_COLLECTION = "glossary"
COURSES_COLLECTION = "courses"
UPLOADS_COLLECTION = "uploads"


class SearchDocumentsArgs(ToolArguments):
    """Passages of filings and documents that answer a query, optionally filtered by
    company, form, fiscal period, date span or collection."""

    query: str = Field(min_length=1, max_length=500)
    symbols: list[Symbol] | None = Field(default=None, min_length=1, max_length=10)
    forms: list[str] | None = Field(default=None, min_length=1, max_length=20)
    fiscal_year: FiscalYear | None = None
    fiscal_quarter: int | None = Field(default=None, ge=1, le=4)
    from_date: date | None = Field(default=None, alias="from")
    to_date: date | None = Field(default=None, alias="to")
    collection: str | None = Field(default=None, max_length=100)
    limit: int = Field(default=5, ge=1, le=50)

    @field_validator("forms")
    @classmethod
    def forms_are_spelled_as_sec_does(cls, forms: list[str] | None) -> list[str] | None:
        return forms_as_sec_spells_them(forms)


SEARCH_DOCUMENTS_SPEC = ToolSpec(
    name=SEARCH_DOCUMENTS,
    arguments=SearchDocumentsArgs,
    runner="services.tools.document_search:run",
    intents=("document_search", "definition"),
    needs=frozenset({"documents"}),
    # The glossary explains terms; every other collection is searched for what it says.
    answers=lambda arguments: (
        "definition" if arguments.collection == GLOSSARY_COLLECTION else "document_search"
    ),
)
