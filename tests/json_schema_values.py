"""Values a JSON schema allows, as a hypothesis strategy: the subset of JSON Schema that
pydantic writes for finq's tool arguments (objects, anyOf, enums, strings with a pattern,
a length or a date format, bounded integers and numbers, arrays, booleans and null, and
nested models as `$defs` named by `$ref`).

A schema using anything else fails loudly, so a new kind of argument cannot pass the
property tests by being skipped."""

from __future__ import annotations

from datetime import date
from typing import Any

from hypothesis import find
from hypothesis import strategies as st

_IGNORED = {"title", "description"}
_KNOWN = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "anyOf",
    "enum",
    "format",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "pattern",
    "$defs",
    "$ref",
    *_IGNORED,
}


def values_of(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    """`defs`: the root schema's `$defs`, which a `$ref` anywhere below it names."""
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"a schema keyword values_of does not read: {sorted(unknown)}")
    defs = {**(defs or {}), **schema.get("$defs", {})}
    if "$ref" in schema:
        return values_of(defs[schema["$ref"].removeprefix("#/$defs/")], defs)
    if "anyOf" in schema:
        return st.one_of(*(values_of(part, defs) for part in schema["anyOf"]))
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {name: values_of(part, defs) for name, part in properties.items() if name in required},
            optional={
                name: values_of(part, defs)
                for name, part in properties.items()
                if name not in required
            },
        )
    if kind == "array":
        return st.lists(
            values_of(schema.get("items", {"type": "string"}), defs),
            min_size=schema.get("minItems", 0),
            max_size=schema.get("maxItems", 5),
        )
    if kind == "string":
        if schema.get("format") == "date":
            return st.dates(date(1990, 1, 1), date(2030, 12, 31)).map(date.isoformat)
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 40))
    if kind == "integer":
        return st.integers(schema.get("minimum", -(10**6)), schema.get("maximum", 10**6))
    if kind == "number":
        return st.floats(
            schema.get("minimum", -1e9),
            schema.get("maximum", 1e9),
            allow_nan=False,
            allow_infinity=False,
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    raise ValueError(f"a schema values_of does not read: {schema}")


def smallest_of(
    schema: dict[str, Any], defs: dict[str, Any] | None = None, *, filled: bool = False
) -> Any:
    """The value `values_of(schema)` shrinks towards, computed rather than searched for (a
    search took hypothesis about 40 CPU-seconds over finq's tools): null where an anyOf
    allows it (with `filled`, its first other branch) and its first branch otherwise, an
    enum's first value, every required property and no other, the fewest items,
    the shortest string ("0"s; a pattern's shortest match, found by hypothesis), the number
    nearest zero, false, null."""
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"a schema keyword smallest_of does not read: {sorted(unknown)}")
    defs = {**(defs or {}), **schema.get("$defs", {})}
    if "$ref" in schema:
        return smallest_of(defs[schema["$ref"].removeprefix("#/$defs/")], defs, filled=filled)
    if "anyOf" in schema:
        # Null where allowed (hypothesis shrinks an optional argument to it), else the first.
        branches, null = schema["anyOf"], {"type": "null"}
        others = [branch for branch in branches if branch != null]
        if filled and others:
            return smallest_of(others[0], defs, filled=filled)
        return None if null in branches else smallest_of(branches[0], defs, filled=filled)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        required = set(schema.get("required", []))
        return {
            name: smallest_of(part, defs, filled=filled)
            for name, part in schema.get("properties", {}).items()
            if name in required
        }
    if kind == "array":
        item = smallest_of(schema.get("items", {"type": "string"}), defs, filled=filled)
        return [item] * schema.get("minItems", 0)
    if kind == "string":
        if schema.get("format") == "date":
            return date(1990, 1, 1).isoformat()
        if "pattern" in schema:
            return find(st.from_regex(schema["pattern"], fullmatch=True), lambda text: True)
        return "0" * schema.get("minLength", 0)
    if kind in {"integer", "number"}:
        low, high = schema.get("minimum", -(10**6)), schema.get("maximum", 10**6)
        nearest = min(max(0, low), high)
        return nearest if kind == "integer" else float(nearest)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    raise ValueError(f"a schema smallest_of does not read: {schema}")
