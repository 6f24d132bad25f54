"""What a tool is, as data: declared once, in its family's module, and found through the
registry (`shared.tools`). The whitelist, the model's tool schemas, dispatch in the tools
stage, the policy gate and "which intent does this call answer" are all read from here.

A spec names its runner as "module:function" rather than holding it: the router and the
gateway import every spec, and neither may import the tools stage's SQL or its models.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StringConstraints,
    field_validator,
    model_serializer,
)

Symbol = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z.\-]{0,9}$")]
FiscalYear = Annotated[int, Field(ge=1900, le=2100)]

_FORM = re.compile(r"^[A-Z0-9][A-Z0-9 \-/]{0,19}$")
_UNDASHED_FORM = re.compile(r"^(\d+)([A-Z]+(?:/A)?)$")


def forms_as_sec_spells_them(forms: list[str] | None) -> list[str] | None:
    """ "10K" and "8k" are how people write them; EDGAR writes "10-K" and "8-K"."""
    if forms is None:
        return None
    spelled: list[str] = []
    for raw in forms:
        form = _UNDASHED_FORM.sub(r"\1-\2", " ".join(raw.upper().split()))
        if not _FORM.match(form):
            raise ValueError(f"not an SEC form type: {raw!r}")
        spelled.append(form)
    return list(dict.fromkeys(spelled))


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple):
        return any(_holds_nul(item) for item in value)
    return False


class ToolArguments(BaseModel):
    """The base of every tool's argument model. On the wire an argument left unset is left
    out (a plan reads as what it asks for), and a field with an alias ("from") is written by
    it, as the model's schema names it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul_in_text(cls, value: Any) -> Any:
        # PostgreSQL's text holds no NUL character: an argument with one (a model's garbled
        # account name) is refused here, not failed on at the database.
        if _holds_nul(value):
            raise ValueError("text arguments may not hold a NUL character")
        return value

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {name: value for name, value in handler(self).items() if value is not None}


ArgumentsT = TypeVar("ArgumentsT", bound=ToolArguments)

# What a runner needs beyond the database and the user's identity, which every runner has.
# A stage without it (no documents index yet) refuses the call as unavailable.
Dependency = Literal["documents"]


@dataclass(frozen=True)
class ToolSpec(Generic[ArgumentsT]):
    """One tool: its wire name, its argument model (validation, JSON schema and, from its
    docstring, the description the model reads), its runner, what the runner needs, and the
    intents its calls may answer."""

    name: str
    arguments: type[ArgumentsT]
    # "module:function", an `async (arguments, deps) -> ToolResult` of the tools stage.
    runner: str
    # The intents it serves, the one a call answers by default first.
    intents: tuple[str, ...]
    needs: frozenset[Dependency] = frozenset()
    # Which of `intents` a call answers, when that depends on what it asks for.
    answers: Callable[[ArgumentsT], str] | None = None

    def __post_init__(self) -> None:
        if not self.intents:
            raise ValueError(f"the tool {self.name} serves no intent")
        if ":" not in self.runner:
            raise ValueError(f"the tool {self.name}'s runner is not 'module:function'")

    @property
    def description(self) -> str:
        return " ".join((self.arguments.__doc__ or self.name).split())

    def intent_of(self, arguments: ArgumentsT) -> str:
        """Which intent a validated call answers, decided in code from what it asks for."""
        intent = self.answers(arguments) if self.answers is not None else self.intents[0]
        if intent not in self.intents:
            raise ValueError(f"{self.name} answers {intent}, which it does not serve")
        return intent

    def function_definition(self) -> dict[str, Any]:
        """The OpenAI function definition, in strict mode: the argument model's own JSON
        schema, made strict (`strict_schema`), so a model that honours it emits only calls
        the model validates."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": strict_schema(self.arguments.model_json_schema(by_alias=True)),
                "strict": True,
            },
        }


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema as OpenAI's strict mode takes it: every object closed and every property
    required, an optional one as its type or null (null meaning "not given", see
    `unset_nulls`), and no `default` (the argument model applies its own)."""
    if not isinstance(schema, dict):
        return schema
    strict: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "default":
            continue
        if key in {"properties", "$defs"}:
            strict[key] = {name: strict_schema(part) for name, part in value.items()}
        elif key in {"anyOf", "oneOf", "allOf", "prefixItems"}:
            strict[key] = [strict_schema(part) for part in value]
        elif key == "items":
            strict[key] = strict_schema(value)
        else:
            strict[key] = value
    if strict.get("type") == "object" and "properties" in strict:
        required = set(schema.get("required", []))
        for name, part in strict["properties"].items():
            if name not in required and not _admits_null(part):
                strict["properties"][name] = {"anyOf": [part, {"type": "null"}]}
        strict["required"] = list(strict["properties"])
        strict["additionalProperties"] = False
    return strict


def _admits_null(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "null" or any(
        part.get("type") == "null" for part in schema.get("anyOf", [])
    )


def unset_nulls(arguments: Any) -> Any:
    """A strict-mode call's arguments with each null dropped: strict mode makes a model send
    every property, null for one it does not give, and the argument model then applies its
    default (a default need not admit null: `period` is "annual", not None)."""
    if not isinstance(arguments, dict):
        return arguments
    return {name: value for name, value in arguments.items() if value is not None}
