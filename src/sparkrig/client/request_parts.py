"""Request pieces that both the guard battery and the soak send: a JSON schema for structured
output and a tool definition, so a reply is judged against the very schema it was asked for."""

from __future__ import annotations

from typing import Any, Final

PERSON_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
PERSON_FORMAT: Final[dict[str, Any]] = {
    "type": "json_schema",
    "json_schema": {"name": "person", "schema": PERSON_SCHEMA},
}
WEATHER_TOOL: Final[dict[str, Any]] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
