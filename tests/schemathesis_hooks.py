"""What a file of each media type an upload takes looks like, for schemathesis (loaded by
tests/gateway/test_openapi_schemathesis.py through SCHEMATHESIS_HOOKS), and who sends DELETE /v1/me.

Schemathesis generates a multipart file part from the strategy registered for the part's
media type. Without one it draws an arbitrary binary string, and the schema's `minLength: 1`
on the part cannot steer that draw (schemathesis validates a binary part as ""), so it
would send empty files and count the gateway's 422 `empty_document` as a valid request
refused. These strategies draw what a client sends: a small real file of the type, or any
bytes at all, never none.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from datetime import date
from typing import Any

import asyncpg
import schemathesis
from hypothesis import strategies as st

from services.gateway.uploads import ALLOWED_TYPES
from shared.identity import add_user

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
# tests/shared/test_portfolio_import.py.
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


# DELETE /v1/me deletes the user who sends it. Sent as one of the run's users, it would leave
# the rest of the run without them (every later request of theirs a 401), so each time it is
# about to go with one of their keys, it goes with the key of a user made for that request
# alone: the run still sends it in every phase and checks its answer, and keeps its users.
# The test gives the run's keys and the database owner's DSN (who may add users).
RUN_KEYS = frozenset(json.loads(os.environ.get("FINQ_SCHEMATHESIS_KEYS", "[]")))
OWNER_DSN = os.environ.get("FINQ_SCHEMATHESIS_OWNER_DSN", "")


def throwaway_key() -> str:
    async def make() -> str:
        owner = await asyncpg.connect(OWNER_DSN)
        try:
            return (await add_user(owner, f"st-leaver-{secrets.token_hex(4)}"))[1]
        finally:
            await owner.close()

    return asyncio.run(make())


@schemathesis.hook
def before_call(context: schemathesis.HookContext, case: Any, kwargs: dict[str, Any]) -> None:
    if (case.operation.method.upper(), case.operation.path) != ("DELETE", "/v1/me"):
        return
    for name, value in list((case.headers or {}).items()):
        scheme, _, key = str(value).partition(" ")
        if name.lower() == "authorization" and scheme.lower() == "bearer" and key in RUN_KEYS:
            if not OWNER_DSN:
                raise RuntimeError("DELETE /v1/me would delete a user of the run: no owner DSN")
            case.headers[name] = f"Bearer {throwaway_key()}"
