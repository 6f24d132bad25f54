"""structlog JSON logging; each handled message binds request_id, stage and trace_id.

No secret reaches a log line: tracebacks are rendered without local variables (a frame's
locals held the OpenAI key and the database URL), and every string a line carries passes
through `redact`, which masks the password of a URL and anything shaped like an API key.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog
from structlog.tracebacks import ExceptionDictTransformer

# scheme://user:password@host → scheme://user:***@host
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^:/@\s]+:)[^@\s]+(?=@)", re.I)
# OpenAI-style keys (sk-…), finq API keys (finq_…) and bearer tokens.
_KEY = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{8,}|finq_[A-Za-z0-9_-]{20,})|(?<=Bearer )\S+", re.I)


def redact(text: str) -> str:
    """The text with URL passwords and API keys masked."""
    return _KEY.sub("***", _URL_PASSWORD.sub(r"\g<head>***", text))


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(item) for item in value]
    return value


def redact_event(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    return {key: _redacted(value) for key, value in event_dict.items()}


def configure_logging(service: str, level: str = "INFO") -> structlog.stdlib.BoundLogger:
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=level.upper())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)),
            redact_event,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    return structlog.get_logger(service=service)
