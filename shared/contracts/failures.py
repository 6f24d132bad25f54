"""A stage's failure of a request, for the gateway to answer with."""

from __future__ import annotations

from shared.contracts.base import Contract
from shared.subjects import Stage


class StageFailed(Contract):
    stage: Stage
    code: str
    message: str
