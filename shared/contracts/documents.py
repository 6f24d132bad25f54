"""A document uploaded for the ingest stage."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from shared.contracts.base import Contract


class DocumentUploaded(Contract):
    """An upload the gateway stored: its `documents` row (status pending) and its bytes in
    `document_files` are committed; the ingest stage reads, parses, embeds and stores it."""

    document_id: str = Field(max_length=64)
    file_name: str = Field(max_length=300)  # as the user named it, for messages about it
    content_type: str | None = Field(default=None, max_length=200)
    symbol: str | None = Field(default=None, max_length=10)
    form: str | None = Field(default=None, max_length=20)
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    title: str | None = Field(default=None, max_length=300)

    def overrides(self) -> dict[str, Any]:
        """What the uploader said of the document, over what finq reads from it."""
        fields = ("symbol", "form", "fiscal_year", "fiscal_quarter", "title")
        return {name: getattr(self, name) for name in fields if getattr(self, name) is not None}
