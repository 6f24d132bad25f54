"""What the gateway refuses in the text a client sends before it goes anywhere: a question
over its length, with control characters or lone surrogates (neither is text PostgreSQL or
a UTF-8 message can hold: they would fail deep inside as a 500), or blank; a file name that
is not one plain name. The OpenAPI schema states the same limits (shared.contracts.base's
patterns); each refusal here carries its own error code."""

from __future__ import annotations

import re

from shared.contracts.base import CONTROL_CHARACTERS, MAX_QUESTION_CHARS

# What no text may hold: the control characters, and halves of surrogate pairs, which a
# JSON \ud800 escape (or Python's lenient UTF-8 reading of a JSON body) lets through.
_NOT_TEXT = re.compile(rf"[{CONTROL_CHARACTERS}\ud800-\udfff]")
_NOT_IN_A_NAME = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff/\\]")
# The longest file name most file systems hold.
MAX_FILE_NAME_CHARS = 255


def _describe(character: str) -> str:
    if "\ud800" <= character <= "\udfff":
        return f"a lone surrogate (U+{ord(character):04X}), which is not text"
    return f"a control character (U+{ord(character):04X})"


def question_problem(question: str) -> tuple[str, str] | None:
    """The error code and message a question gets, or None when it may be asked. Agrees
    with AskRequest's schema: 1 to MAX_QUESTION_CHARS characters matching QUESTION_PATTERN."""
    if len(question) > MAX_QUESTION_CHARS:
        return (
            "question_too_long",
            f"the question has {len(question)} characters; the limit is {MAX_QUESTION_CHARS}",
        )
    if found := _NOT_TEXT.search(question):
        where = found.start() + 1
        what = _describe(found.group())
        return "invalid_characters", f"character {where} of the question is {what}"
    if not question.strip():
        return "empty_question", "the question is empty"
    return None


def file_name_problem(name: str) -> str | None:
    """Why an upload's file name is refused, or None: it is shown back as the document's
    name, so it is one plain name, never a path or anything a terminal would act on."""
    if not name:
        return "the file has no name"
    if len(name) > MAX_FILE_NAME_CHARS:
        return f"the file name has {len(name)} characters; the limit is {MAX_FILE_NAME_CHARS}"
    if found := _NOT_IN_A_NAME.search(name):
        character = found.group()
        what = "a folder separator" if character in "/\\" else _describe(character)
        return f"the file name has {what}; send the name of the file alone"
    return None
