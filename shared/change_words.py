"""Words of a figure moving up or down, read by the router (a change to compute, a yes-or-no
question's direction) and by the answerer (two columns of a filing's table compared): one
vocabulary, so a question is read the same way whichever stage answers it."""

from __future__ import annotations

import re
from typing import Literal

Direction = Literal["up", "down"]

RISING = (
    r"grow\w*|grew|growth|increas\w*|ris(?:e|es|en|ing)|rose|jump\w*|climb\w*|surg\w*|ramp\w*"
    r"|soar\w*|(?:went|go|gone|going|moved?) up|doubl\w*|tripl\w*|quadrupl\w*"
)
FALLING = (
    r"decreas\w*|declin\w*|f[ae]ll|falling|fallen|drop\w*|shr[iu]nk\w*|plung\w*|slump\w*"
    r"|(?:went|go|gone|going|moved?) down|halv\w*"
)
# Any word of a change between periods, its direction named or not.
GROWTH = re.compile(
    rf"\b(?:{RISING}|{FALLING}|up|down|yoy|year[\s-]+(?:over|on)[\s-]+year)\b", re.I
)
# A question asked to be answered yes or no opens with its auxiliary verb, or puts it first
# after what it is about ("Cloud sales: did they fall?").
YES_NO = re.compile(
    r"(?:^|[:;?]\s+)\s*(?:has|have|had|did|does|do|is|was|were|are|will|would|could|can)\b",
    re.I,
)
_UP = re.compile(rf"\b(?:{RISING}|improv\w*|higher|more)\b", re.I)
_DOWN = re.compile(rf"\b(?:{FALLING}|reduc\w*|lower|less)\b", re.I)


def yes_no_direction(question: str) -> Direction | None:
    """The direction a yes-or-no question asks about ("Has it increased?"), if it names one
    and only one."""
    if not YES_NO.search(question):
        return None
    up, down = bool(_UP.search(question)), bool(_DOWN.search(question))
    if up == down:
        return None
    return "up" if up else "down"
