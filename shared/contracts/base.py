"""The base of every stage message, and the limits of the text a client may send."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

MAX_QUESTION_CHARS = 2000

# What text a client may send, as patterns that JSON Schema (ECMA 262), Python's re and
# pydantic's Rust regex read alike, so the OpenAPI schema states what the gateway enforces.
# Text never holds a C0 control character but tab, newline and carriage return, nor DEL
# (PostgreSQL stores no NUL, and a terminal escape or a backspace has no place in a question).
CONTROL_CHARACTERS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f"  # the inside of a [...] class
# One line (an id, a name, a title): no control character at all.
LINE_PATTERN = r"^[^\x00-\x1f\x7f]*$"
# A question: text with at least one character that is not white space as str.strip() sees
# it (the space-like characters below are the ones str.isspace() holds besides the controls).
_VISIBLE = r"[^\x00-\x20\x7f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
QUESTION_PATTERN = rf"^[^{CONTROL_CHARACTERS}]*{_VISIBLE}[^{CONTROL_CHARACTERS}]*$"


def utc_now() -> datetime:
    return datetime.now(UTC)


class Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)
