"""The subset of JSON Schema sparkrig checks replies against (type, properties, required):
the structured-output guard, the soak's structured replies and the gateway's live guards."""

from __future__ import annotations

from typing import Any, Final

_JSON_TYPES: Final[dict[str, type | tuple[type, ...]]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
}


def schema_problems(value: Any, schema: dict[str, Any]) -> list[str]:
    """The subset of JSON Schema the probes use: type, properties, required."""
    expected = _JSON_TYPES.get(schema.get("type", ""), object)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        return [f"expected {schema.get('type')}, got {type(value).__name__}"]
    problems = []
    if isinstance(value, dict):
        problems += [f"missing {key!r}" for key in schema.get("required", []) if key not in value]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                problems += [f"{key}: {p}" for p in schema_problems(value[key], sub)]
    return problems
