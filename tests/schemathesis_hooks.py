"""What a file of each media type an upload takes looks like, for schemathesis (loaded by
tests/test_openapi_schemathesis.py through SCHEMATHESIS_HOOKS).

Schemathesis generates a multipart file part from the strategy registered for the part's
media type. Without one it draws an arbitrary binary string, and the schema's `minLength: 1`
on the part cannot steer that draw (schemathesis validates a binary part as ""), so it
would send empty files and count the gateway's 422 `empty_document` as a valid request
refused. These strategies draw what a client sends: a small real file of the type, or any
bytes at all, never none.
"""

from __future__ import annotations

from datetime import date

import schemathesis
from hypothesis import strategies as st

from services.gateway.uploads import ALLOWED_TYPES

SAMPLES: dict[str, bytes] = {
    ".pdf": b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF",
    ".html": b"<html><body><p>Apple's revenue grew in fiscal 2023.</p></body></html>",
    ".htm": b"<p>Net income rose.</p>",
    ".docx": b"PK\x03\x04 not really a document",
    ".txt": b"Apple's revenue grew in fiscal 2023.\n",
    ".md": b"# Notes\n\n| metric | 2023 |\n|---|---|\n| revenue | 383 |\n",
}

for suffix, media_types in ALLOWED_TYPES.items():
    files = st.one_of(st.just(SAMPLES[suffix]), st.binary(min_size=1, max_size=2048))
    for media_type in sorted(media_types):
        schemathesis.openapi.media_type(media_type, files)


# An activity file for POST /v1/portfolio/import. Its schema can say only "text": which rows
# finq takes (known symbols, a sale of what is held) is no JSON Schema, so text drawn from it
# would be refused with 422 and count as a valid request rejected. These are files finq
# imports: deposits and buys, which never oversell; the refusals are tested row by row in
# tests/test_portfolio_import.py.
@st.composite
def activity_files(draw: st.DrawFn) -> bytes:
    rows = ["date,account,action,symbol,quantity,price,amount"]
    for _ in range(draw(st.integers(min_value=1, max_value=5))):
        day = draw(st.dates(min_value=date(2000, 1, 1), max_value=date(2030, 12, 31)))
        account = draw(st.sampled_from(["Brokerage", "Roth IRA", "Joint"]))
        if draw(st.booleans()):
            amount = draw(st.integers(min_value=1, max_value=1_000_000))
            rows.append(f"{day},{account},deposit,,,,{amount}")
        else:
            symbol = draw(st.sampled_from(["AAPL", "MSFT", "VTI", "BND", "BTC"]))
            quantity = draw(st.integers(min_value=1, max_value=1000))
            cents = draw(st.integers(min_value=0, max_value=10_000_000))
            rows.append(f"{day},{account},buy,{symbol},{quantity},{cents / 100:.2f},")
    return ("\n".join(rows) + "\n").encode()


schemathesis.openapi.media_type("text/csv", activity_files())
