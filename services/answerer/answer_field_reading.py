"""The `answer` of the model's JSON reply (`{"answer": ..., "citations": [...]}`), read as
the reply streams in: each piece of raw JSON in, the answer's newly decoded text out, so a
reader sees prose, never JSON. Pieces split anywhere, inside an escape too; whatever the
split, the text read out, joined, is the string `json.loads` gives for `answer`.

A reply that is not such JSON yields nothing (or a prefix of what it seemed to hold); the
answerer parses the whole reply at the end as before, so this reading decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, auto

ANSWER_KEY = "answer"
# JSON's one-letter escapes and what they stand for.
SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


class Reading(Enum):
    OUTSIDE = auto()  # between tokens of the reply, looking for the answer's key
    IN_STRING = auto()  # inside some other string (a key, a citation)
    ANSWER = auto()  # inside the answer's string: its text goes out
    DONE = auto()  # the answer's string has ended


@dataclass
class AnswerFieldReader:
    """Feed it the reply's pieces in order (`read`); each call returns the answer's text
    that piece completed ("" when none)."""

    _reading: Reading = Reading.OUTSIDE
    _depth: int = 0
    # The string being read (a key at the top level is kept to know the answer's key), and
    # the last top-level string read, the key when a colon follows.
    _string: list[str] = field(default_factory=list)
    _string_at_top: bool = False
    _last_top_string: str | None = None
    _value_of: str | None = None  # the key whose value comes next
    _escape: str | None = None  # an escape begun and not yet complete ("\\", "\\u12")
    _high_surrogate: int | None = None  # the first half of a \\uXXXX pair

    def read(self, piece: str) -> str:
        out: list[str] = []
        for char in piece:
            match self._reading:
                case Reading.DONE:
                    break
                case Reading.ANSWER:
                    self._answer_char(char, out)
                case Reading.IN_STRING:
                    self._string_char(char)
                case Reading.OUTSIDE:
                    self._outside_char(char)
        return "".join(out)

    def _outside_char(self, char: str) -> None:
        if char.isspace():
            return
        if char == '"':
            if self._depth == 1 and self._value_of == ANSWER_KEY:
                self._reading = Reading.ANSWER
            else:
                self._reading = Reading.IN_STRING
                self._string = []
                self._string_at_top = self._depth == 1
            self._value_of = None
            return
        if char == ":" and self._depth == 1:
            self._value_of = self._last_top_string
            return
        self._value_of = None
        self._last_top_string = None
        if char in "{[":
            self._depth += 1
        elif char in "}]":
            self._depth -= 1

    def _string_char(self, char: str) -> None:
        if self._escape is not None:
            self._escape = None  # another string's escapes matter only as not-its-end
            self._string.append(char)
        elif char == "\\":
            self._escape = "\\"
        elif char == '"':
            self._reading = Reading.OUTSIDE
            if self._string_at_top:
                self._last_top_string = "".join(self._string)
        else:
            self._string.append(char)

    def _answer_char(self, char: str, out: list[str]) -> None:
        if self._escape is None:
            if char == "\\":
                self._escape = "\\"
            elif char == '"':
                self._reading = Reading.DONE
                out.append(self._lone_surrogate())
            else:
                out.append(self._lone_surrogate() + char)
            return
        self._escape += char
        if self._escape.startswith("\\u"):
            if len(self._escape) > 2 and char not in HEX_DIGITS:
                self._reading = Reading.DONE  # not JSON: nothing more to trust
                return
            if len(self._escape) < 6:
                return
        escape, self._escape = self._escape, None
        if not escape.startswith("\\u"):
            out.append(self._lone_surrogate() + SIMPLE_ESCAPES.get(escape[1], escape[1]))
            return
        code = int(escape[2:], 16)
        if 0xD800 <= code < 0xDC00:
            pending = self._lone_surrogate()
            if pending:
                out.append(pending)
            self._high_surrogate = code
        elif 0xDC00 <= code < 0xE000 and self._high_surrogate is not None:
            high, self._high_surrogate = self._high_surrogate, None
            out.append(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
        else:
            out.append(self._lone_surrogate() + chr(code))

    def _lone_surrogate(self) -> str:
        """A first half of a pair no second half followed, as json.loads keeps it."""
        if self._high_surrogate is None:
            return ""
        high, self._high_surrogate = self._high_surrogate, None
        return chr(high)
