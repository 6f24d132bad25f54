"""The gateway's OpenAPI schema: FastAPI's, with what the server enforces that FastAPI does
not write by itself, so a client (and schemathesis, tests/gateway/test_openapi_schemathesis.py)
can rely on the schema alone:

- every error a route answers, as the JSON error body, with the headers that come with it
  (`error_responses`, used in each route's decorator);
- the media types an upload may be sent as, that it is not empty, and form fields that are
  present, absent or empty (which is absent, as in an HTML form), never JSON's null (a
  multipart field cannot carry one);
- the Bearer key, required or optional as FINQ_AUTH says;
- links from what a request creates to the routes that read it, for stateful testing;
- each event a stream of server-sent events sends, and its data's JSON schema (the
  `itemSchema` of OpenAPI 3.2, which schemathesis checks each event against); a refusal
  before such a stream starts is the JSON error body, not an event.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from services.gateway.http_models import ErrorBody
from services.gateway.streaming import MEDIA_TYPE as EVENT_STREAM
from services.gateway.streaming import STREAM_EVENTS
from services.gateway.uploads import ALLOWED_TYPES

DESCRIPTIONS = {
    400: "The body could not be read (broken multipart or JSON framing)",
    401: "No valid API key: missing when keys are required, unknown or revoked",
    403: "The caller is not an operator (finq users add NAME --operator)",
    404: "Not found among the caller's own rows",
    409: "The dead letter cannot be sent again from here (the reason says why)",
    413: "The body is over its size limit",
    415: "Not a file type finq reads, or sent as a type its name contradicts",
    422: "A parameter or the body breaks the schema's constraints",
    429: "Over the caller's request rate; Retry-After says when to try again",
    502: "A pipeline stage failed on the question",
    503: "A dependency (database, message bus, a stage) is not available just now",
    504: "No answer before the deadline",
}
_SECONDS: dict[str, Any] = {"type": "string", "pattern": "^[0-9]+$"}
HEADERS: dict[int, dict[str, dict[str, Any]]] = {
    401: {
        "WWW-Authenticate": {
            "description": "The scheme to authenticate with",
            "required": True,
            "schema": {"type": "string"},
        }
    },
    429: {
        "Retry-After": {
            "description": "Seconds to wait before the next request",
            "required": True,
            "schema": _SECONDS,
        }
    },
    503: {
        "Retry-After": {
            "description": "Seconds to wait before sending the request again",
            "required": False,
            "schema": _SECONDS,
        }
    },
}
BEARER = "bearer"


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The JSON error body a route answers with for each of `statuses`."""
    responses: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        response: dict[str, Any] = {"model": ErrorBody, "description": DESCRIPTIONS[status]}
        if status in HEADERS:
            response["headers"] = HEADERS[status]
        responses[status] = response
    return responses


# (method, path, status) of a response → links: name → (method, path, parameters).
LINKS: dict[tuple[str, str, str], dict[str, tuple[str, str, dict[str, str]]]] = {
    ("post", "/v1/ask", "200"): {
        "ConversationOfTheAnswer": (
            "get",
            "/v1/conversations/{conversation_id}",
            {"conversation_id": "$response.body#/conversation_id"},
        ),
        "LogOfTheRequest": (
            "get",
            "/v1/requests/{request_id}",
            {"request_id": "$response.body#/request_id"},
        ),
        "DeleteTheConversation": (
            "delete",
            "/v1/conversations/{conversation_id}",
            {"conversation_id": "$response.body#/conversation_id"},
        ),
    },
    **{
        ("post", "/v1/documents", status): {
            "JobOfTheUpload": (
                "get",
                "/v1/documents/{document_id}",
                {"document_id": "$response.body#/id"},
            ),
            "DeleteTheUpload": (
                "delete",
                "/v1/documents/{document_id}",
                {"document_id": "$response.body#/id"},
            ),
        }
        for status in ("200", "202")
    },
}


def finq_openapi(app: FastAPI, *, keys_required: bool) -> dict[str, Any]:
    """The schema, built once and cached on the app as FastAPI does."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
    )
    _state_security(schema, keys_required)
    _state_uploads(schema)
    _state_event_streams(schema)
    _add_links(schema)
    app.openapi_schema = schema
    return schema


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
    ]


def _state_security(schema: dict[str, Any], keys_required: bool) -> None:
    """Every route that acts for a user takes `Authorization: Bearer <key>`: required when
    FINQ_AUTH=required, optional (the local user) when it is `local`."""
    components = schema.setdefault("components", {})
    components.setdefault("securitySchemes", {})[BEARER] = {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key made by `finq users add NAME`",
    }
    requirement: list[dict[str, list[str]]] = [{BEARER: []}]
    if not keys_required:
        requirement.append({})  # no key at all: the local user
    for _, _, operation in _operations(schema):
        if "401" in operation["responses"]:
            operation["security"] = requirement


def _state_uploads(schema: dict[str, Any]) -> None:
    """A multipart form's optional fields are present, absent or empty (FastAPI reads an
    empty field as an absent one), never null; its file part holds a byte at least, of any
    media type finq reads. (Its size limit is in its description and the 413, not a
    maxLength: the length of a binary part is not JSON Schema's count of characters.)"""
    media_types = sorted({t for types in ALLOWED_TYPES.values() for t in types})
    for _, _, operation in _operations(schema):
        content = operation.get("requestBody", {}).get("content", {})
        form = content.get("multipart/form-data")
        if form is None:
            continue
        body = _resolve(schema, form["schema"])
        required = set(body.get("required", []))
        for name, field in body.get("properties", {}).items():
            branches = [b for b in field.get("anyOf", []) if b.get("type") != "null"]
            if len(branches) == 1 and len(field["anyOf"]) == 2:
                del field["anyOf"]
                field.update(branches[0])
            if field.get("contentMediaType") or field.get("format") == "binary":
                # format: binary as well, so a generator knows the part is bytes.
                field.update(format="binary", minLength=1)
                form.setdefault("encoding", {})[name] = {"contentType": ", ".join(media_types)}
            elif name not in required and not _takes_empty(field):
                value = {k: field.pop(k) for k in list(field) if k not in ("title", "description")}
                field["anyOf"] = [value, {"type": "string", "maxLength": 0}]


def _takes_empty(field: dict[str, Any]) -> bool:
    """Whether an empty string is valid for `field` as it stands."""
    if field.get("type") != "string" or field.get("minLength", 0) > 0:
        return False
    return "pattern" not in field or re.search(field["pattern"], "") is not None


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    reference = node.get("$ref")
    if reference is None:
        return node
    found: dict[str, Any] = schema
    for part in reference.removeprefix("#/").split("/"):
        found = found[part]
    return found


def _add_links(schema: dict[str, Any]) -> None:
    for (method, path, status), links in LINKS.items():
        response = schema["paths"][path][method]["responses"][status]
        response["links"] = {
            name: {
                "operationId": schema["paths"][target_path][target_method]["operationId"],
                "parameters": parameters,
            }
            for name, (target_method, target_path, parameters) in links.items()
        }


def _state_event_streams(schema: dict[str, Any]) -> None:
    """An operation answering server-sent events (its response class's media type) sends
    the events of STREAM_EVENTS, each with its data as one line of JSON; its refusals are
    JSON, which FastAPI would otherwise document under the stream's media type."""
    for _, _, operation in _operations(schema):
        for status, response in operation["responses"].items():
            content = response.get("content", {})
            if EVENT_STREAM not in content:
                continue
            if not status.startswith("2"):
                content["application/json"] = content.pop(EVENT_STREAM)
                continue
            events = [_event(names, _component(schema, model)) for names, model in STREAM_EVENTS]
            content[EVENT_STREAM] = {"itemSchema": {"oneOf": events}}


def _event(names: tuple[str, ...], data: dict[str, Any]) -> dict[str, Any]:
    """One kind of server-sent event: its name (one of `names`) and its data's schema."""
    name = {"const": names[0]} if len(names) == 1 else {"enum": list(names)}
    return {
        "type": "object",
        "required": ["event", "data"],
        "properties": {
            "event": {"type": "string", **name},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": data,
            },
        },
    }


def _component(schema: dict[str, Any], model: type[BaseModel]) -> dict[str, str]:
    """A reference to `model` among the schema's components, adding it (and the models it
    holds) when no route's body or answer brought it there already."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    if model.__name__ not in components:
        _, definitions = models_json_schema(
            [(model, "serialization")], ref_template="#/components/schemas/{model}"
        )
        for name, definition in definitions.get("$defs", {}).items():
            components.setdefault(name, definition)
    return {"$ref": f"#/components/schemas/{model.__name__}"}
