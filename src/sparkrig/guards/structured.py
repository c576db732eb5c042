"""Guard 8, structured output: a JSON-schema reply must parse and validate, a tool call's
arguments must parse as JSON (research notes: BAD_TOOL_ARGS, the tool battery's truncation case);
JSON asked for in the prompt alone is scored, not failed (the model may simply be weak)."""

from __future__ import annotations

import json
from typing import Any, Final

from sparkrig.client.records import RequestError
from sparkrig.client.request_parts import PERSON_FORMAT, PERSON_SCHEMA, WEATHER_TOOL
from sparkrig.detectors.schema import schema_problems
from sparkrig.guards.context import GuardContext
from sparkrig.guards.reply_shape import answerless_shape
from sparkrig.guards.verdict import GuardResult, failed, passed, skipped

NAME: Final = "structured"


def _parse(text: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg} at char {exc.pos}): {text[:60]!r}"


def _schema_failure(error: RequestError) -> str:
    """The client's message, which holds the server's own text; where the server sent none,
    what that means for a JSON-schema request on vLLM 0.26.0: its front end found no backend to
    compile the schema (xgrammar failed, then llguidance), and says why only in its log."""
    failure = f"the JSON-schema request failed: {error.message}"
    if error.server is not None and error.server.message is None:
        failure += (
            "; vLLM 0.26.0 fails a JSON-schema request this way when neither xgrammar nor "
            "llguidance imports in the server's Python"
        )
    return failure


async def structured_guard(context: GuardContext) -> GuardResult:
    parts: dict[str, str] = {}
    schema_request = context.chat(
        "Give a person's name and age as JSON.",
        max_tokens=64,
        extra={"response_format": PERSON_FORMAT},
    )
    record = await context.send(schema_request)
    error = record.error
    if error is not None and error.status in (400, 404, 422, 501):
        said = f": {error.server.describe('an error body')}" if error.server else ""
        parts["json_schema"] = (
            f"skipped: the server refused response_format (HTTP {error.status}{said})"
        )
    elif error is not None:
        return failed(NAME, _schema_failure(error))
    elif not record.content.strip():
        return failed(
            NAME,
            f"the JSON-schema reply is empty ({answerless_shape(record)}): no JSON was written — "
            "read the prompt the server renders for it (a reasoning template may put the answer "
            "in the reasoning, or open a think block the model ends at once)",
            reply=record.content,
        )
    else:
        value, problem = _parse(record.content)
        problems = [problem] if problem else schema_problems(value, PERSON_SCHEMA)
        if problems:
            return failed(NAME, f"JSON-schema reply invalid: {problems[0]}", reply=record.content)
        parts["json_schema"] = "valid"
    prompt_only = await context.send(
        context.chat(
            'Reply with only a JSON object with keys "city" and "country" for Paris.', max_tokens=48
        )
    )
    parts["prompt_only"] = "parses" if _parse(prompt_only.content)[1] is None else "does not parse"
    tool = await context.send(
        context.chat(
            "What is the weather in Paris?",
            max_tokens=64,
            tools=[WEATHER_TOOL],
            extra={"tool_choice": "required"},
        )
    )
    calls = tool.tool_calls if tool.error is None else []
    if not calls:
        parts["tool_call"] = "skipped: the server returned no tool call (no tool-call template)"
    for call in calls:
        arguments = call.get("function", {}).get("arguments", "")
        _, problem = _parse(arguments if isinstance(arguments, str) else json.dumps(arguments))
        if problem:
            return failed(NAME, f"tool call arguments do not parse: {problem}", parts=parts)
    if calls:
        parts["tool_call"] = f"{len(calls)} call(s), arguments parse"
    if parts["json_schema"].startswith("skipped") and not calls:
        return skipped(
            NAME,
            "the server supports neither response_format nor tool calls; json_schema: "
            + parts["json_schema"],
            parts=parts,
        )
    return passed(NAME, "; ".join(f"{k}: {v}" for k, v in parts.items()), parts=parts)
