"""How each model family is asked to think, and where its reply carries the thinking: one
registry entry per family (DeepSeek V4.1, DeepSeek V4, DeepSeek-R1, GLM-5.x, Qwen3, gpt-oss, a
generic `<think>` one).

The gateway (which requests are reasoning ones), the guards (how to ask for thinking), the bench
and lint (which vLLM `--reasoning-parser` a model needs) read this one table. What an entry says
of thinking comes from docs/field-notes.md; where the field reports are silent the entry says so
in `silent`, and the value it carries there is the project's, not a report's. The vLLM parser
names are vLLM's own (the `reasoning_parsers` of src/sparkrig/engines/vllm/knowledge/, every
release read).

`thinking_asked` reads a request the way the server will: the switch in the request's
`chat_template_kwargs` (any family's key), a `reasoning_effort` at the top level or inside
`chat_template_kwargs` (as one agent benchmark sends it, field notes: agent-benchmark-request),
then the server's `--default-chat-template-kwargs`, which a request's own keys override.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from pydantic import Field

from sparkrig.frozen_model import FrozenModel
from sparkrig.registry import Registry

ReplyKey = Literal["reasoning", "reasoning_content", "think_tags"]
# the effort value that turns thinking off (field notes: reasoning-none-thinking)
EFFORT_NONE = "none"
FIX_NONE_WITH_THINKING = (
    "do not send reasoning_effort 'none' together with thinking on — drop reasoning_effort "
    "(either setting alone is fine) or turn thinking off"
)


class ReasoningFamily(FrozenModel):
    """One family's thinking facts. `switch_key` is its `chat_template_kwargs` key (None: it has
    none, or the reports do not name one); `efforts` maps each `reasoning_effort` value to what it
    does on the family's reported runtime."""

    name: str
    models: tuple[str, ...] = Field(
        description="shell globs matched against the lower-cased model id; empty: fallback only"
    )
    switch_key: str | None = Field(description="chat_template_kwargs key that turns thinking on")
    effort_turns_on: bool = Field(
        description="a reasoning_effort other than 'none' turns thinking on by itself"
    )
    think_in_prompt: bool | None = Field(
        description="the chat template opens <think> in the prompt (None: the reports do not say)"
    )
    reply_key: ReplyKey | None = Field(
        description="where a correct server puts the reasoning (None: the reports do not say)"
    )
    close_tag_in_content: str = Field(description="what a </think> inside content means")
    efforts: dict[str, str] = Field(description="reasoning_effort value -> what it does")
    ask_every_switch: bool = Field(
        default=False,
        description="ask for thinking with every known switch key (a model no family matches)",
    )
    vllm_reasoning_parsers: tuple[str, ...] = Field(
        default=(),
        description="the names vLLM's --reasoning-parser takes for this family, best first; lint "
        "asks for the first one the target release ships (empty: sparkrig names none, and "
        "`silent` says why)",
    )
    vllm_parser_why: str = Field(
        default="",
        description="what goes wrong under a later name of vllm_reasoning_parsers when the "
        "release ships the first",
    )
    silent: tuple[str, ...] = Field(default=(), description="what the field reports do not say")
    source: str = Field(description="the field notes the entry rests on")

    def matches(self, model: str) -> bool:
        name = model.lower()
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.models)

    def thinking_on_fields(self) -> dict[str, Any]:
        """Request fields that ask this family to think; {} when no way is known."""
        if self.ask_every_switch:
            return {"chat_template_kwargs": dict.fromkeys(SWITCH_KEYS, True)}
        if self.switch_key is not None:
            return {"chat_template_kwargs": {self.switch_key: True}}
        if self.effort_turns_on:
            return {"reasoning_effort": "high"}
        return {}

    def thinking_off_fields(self) -> dict[str, Any]:
        """Request fields that turn this family's thinking off; {} when no way is known."""
        if self.switch_key is not None:
            return {"chat_template_kwargs": {self.switch_key: False}}
        return {}

    @property
    def can_be_asked(self) -> bool:
        return bool(self.thinking_on_fields())


FAMILIES: Registry[ReasoningFamily] = Registry("reasoning family")

# DeepSeek V4 and V4.1 think alike (field notes: reasoning-families, one row for both) but take
# different vLLM parsers: deepseek_v41 (in the knowledge data from 0.30.0, not in 0.26.0 or
# 0.29.0) is deepseek_v4's state machine with V4.1's spaced DSML tool-call markers
# (vllm/parser/deepseek_v41.py). V4.1 is registered first: its globs are narrower than V4's.
DEEPSEEK_V4 = ReasoningFamily(
    name="deepseek-v4",
    models=("*deepseek*v4*", "*deepseek-v4*", "*ds4*"),
    switch_key="thinking",
    effort_turns_on=True,
    think_in_prompt=True,
    reply_key="reasoning",
    close_tag_in_content=(
        "the server lacks --reasoning-parser deepseek_v4 and its --reasoning-config"
    ),
    efforts={
        "none": "chat-mode prompt; on the report's runtime, with thinking on, the parser still "
        "expects </think> and files the whole reply as reasoning, content null (vLLM 0.26.0's "
        "deepseek_v4 tokenizer mode and parser both read it as thinking off: the answer in "
        "content, replayed)",
        "low": "thinking on; adds nothing to the prompt",
        "medium": "thinking on; adds nothing to the prompt",
        "high": "thinking on; adds nothing to the prompt (the vendor's low)",
        "max": "thinking on; on the report's runtime adds the model's high text (79 tokens), not "
        "its max text (vLLM 0.26.0's deepseek_v4 encoding adds its max text, replayed)",
        "xhigh": "as max",
    },
    vllm_reasoning_parsers=("deepseek_v4",),
    source="docs/field-notes.md#think-in-prompt, #reasoning-key, #reasoning-none-thinking, "
    "#reasoning-effort-levels",
)
FAMILIES.add(
    "deepseek-v4.1",
    DEEPSEEK_V4.model_copy(
        update={
            "name": "deepseek-v4.1",
            "models": ("*deepseek*v4.1*", "*deepseek*v41*", "*ds4.1*", "*ds41*"),
            "close_tag_in_content": "the server lacks --reasoning-parser deepseek_v41 "
            "(deepseek_v4 before vLLM 0.30) and its --reasoning-config",
            "vllm_reasoning_parsers": ("deepseek_v41", "deepseek_v4"),
            "vllm_parser_why": "deepseek_v4 does not know V4.1's spaced DSML tool-call marker "
            "(<｜DSML｜ calls>), so a tool call the model opens before </think> stays in "
            "`reasoning` (vllm/parser/deepseek_v41.py)",
            "silent": (
                "V4.1's effort table is reported only as a cache effect, not per value: the "
                "efforts are V4's",
                "which --reasoning-parser: no report names one for V4.1; deepseek_v41 is "
                "vLLM's own parser for it (from 0.30), deepseek_v4 the older releases' only one",
            ),
        }
    ),
)
FAMILIES.add("deepseek-v4", DEEPSEEK_V4)
FAMILIES.add(
    "deepseek-r1",
    ReasoningFamily(
        name="deepseek-r1",
        models=("*deepseek*r1*",),
        switch_key=None,
        effort_turns_on=False,
        think_in_prompt=None,
        reply_key=None,
        close_tag_in_content="the server's reasoning parser did not split the reply",
        efforts={},
        vllm_reasoning_parsers=("deepseek_r1",),
        silent=(
            "the family is not in the reports: it is here for vLLM's deepseek_r1 parser, which "
            "lint asks for",
            "how a request turns thinking on or off",
            "where the reply carries the reasoning",
        ),
        source="docs/field-notes.md#reasoning-families",
    ),
)
FAMILIES.add(
    "glm-5",
    ReasoningFamily(
        name="glm-5",
        models=("*glm-5*", "*glm5*"),
        switch_key=None,
        effort_turns_on=False,
        think_in_prompt=None,
        reply_key=None,
        close_tag_in_content="the server's reasoning parser did not split the reply",
        efforts={},
        silent=(
            "how a request turns thinking on or off",
            "where the reply carries the reasoning",
            "what reasoning_effort does",
            "which --reasoning-parser: vLLM ships glm45 and glm47 (GLM-4.5's and 4.7's, every "
            "release read), but no report serves GLM-5.x with one, so lint asks for none",
        ),
        source="docs/field-notes.md#reasoning-families (the reports serve GLM-5.3-Flash but "
        "describe no thinking switch for it)",
    ),
)
FAMILIES.add(
    "qwen3",
    ReasoningFamily(
        name="qwen3",
        models=("*qwen3*",),
        switch_key="enable_thinking",
        effort_turns_on=False,
        think_in_prompt=None,
        reply_key=None,
        close_tag_in_content="the server's reasoning parser did not split the reply",
        efforts={"none": "read as thinking off by sparkrig (the project's reading)"},
        vllm_reasoning_parsers=("qwen3",),
        silent=(
            "the family is not in the reports: enable_thinking is the key sparkrig's gateway "
            "already honoured, not a reported fact",
            "where the reply carries the reasoning",
        ),
        source="docs/field-notes.md#reasoning-families",
    ),
)
FAMILIES.add(
    "gpt-oss",
    ReasoningFamily(
        name="gpt-oss",
        models=("*gpt-oss*",),
        switch_key=None,
        effort_turns_on=True,
        think_in_prompt=None,
        reply_key=None,
        close_tag_in_content="not expected: the family does not use <think> tags",
        efforts={
            "low": "thinking on",
            "medium": "thinking on",
            "high": "thinking on",
        },
        vllm_reasoning_parsers=("openai_gptoss",),
        silent=(
            "the family is not in the reports: a top-level reasoning_effort as its switch is "
            "the project's reading",
            "where the reply carries the reasoning; whether 'none' is accepted",
        ),
        source="docs/field-notes.md#reasoning-families",
    ),
)
FAMILIES.add(
    "think-tags",
    ReasoningFamily(
        name="think-tags",
        models=(),
        switch_key=None,
        effort_turns_on=False,
        think_in_prompt=None,
        reply_key="think_tags",
        close_tag_in_content="the reasoning ends there; a lone </think> means the template "
        "opened <think> in the prompt",
        efforts={},
        ask_every_switch=True,
        silent=(
            "any switch: a model no other family matches is asked with every known switch key "
            "(a chat template ignores keys it does not use; the project's choice)",
        ),
        source="docs/field-notes.md#think-in-prompt",
    ),
)

FALLBACK = FAMILIES.get("think-tags")
SWITCH_KEYS: tuple[str, ...] = tuple(
    dict.fromkeys(f.switch_key for f in FAMILIES.entries() if f.switch_key is not None)
)


def family_of(model: str | None) -> ReasoningFamily:
    """The first family whose globs match the model id; the generic `<think>` one otherwise."""
    if model:
        for family in FAMILIES.entries():
            if family.matches(model):
                return family
    return FALLBACK


class ThinkingAsk(NamedTuple):
    """What a request asks of the server's thinking, as the server will read it."""

    thinking: bool | None
    """on, off, or None when neither the request nor the server's defaults say"""
    effort: str | None
    inherited: bool
    """the answer came from the server's default chat-template kwargs, not the request"""
    none_with_thinking: bool
    """reasoning_effort 'none' together with a thinking switch that is on (field notes:
    reasoning-none-thinking): what the reply holds depends on the runtime (see
    `NONE_WITH_THINKING_OUTCOMES`)"""
    switch_conflict: bool = False
    """the request itself turns one switch on and another off, not by way of reasoning_effort
    'none': a top-level reasoning_effort adds `enable_thinking` beside its `thinking: false`. (An
    effort on a server whose defaults turn thinking off is DeepSeek V4's way to think, and is
    not a conflict.)
    A server that reads either key as on thinks; a template that reads only `thinking` writes a
    chat prompt while the parser expects thinking (detectors/empty_content.SWITCH_CONFLICT)"""
    text_switches: tuple[str, ...] = ()
    """switch keys the request sent as text: the renderers read any non-empty text as true, so
    "false" turns thinking on"""


# vLLM 0.26.0's own code, replayed on a CPU (tests/fixtures/vllm/replay/): where the reply of a
# reasoning_effort "none" + thinking-on request lands, by the server's renderer
NONE_WITH_THINKING_OUTCOMES = (
    "the report's runtime filed the whole reply as reasoning, content null, finish stop (4 of 4); "
    "vLLM 0.26.0 with --tokenizer-mode deepseek_v4 reads 'none' as thinking off and answers in "
    "content; a Jinja template that reads only `thinking` opens <think> while vLLM 0.26.0's "
    "deepseek_v4 parser starts in content, so the thinking lands in content, its </think> dropped"
)


# vLLM's merge_kwargs: a request's value of None or "auto" leaves the default in place
UNSET = (None, "auto")


def served_kwargs(
    body: Mapping[str, Any], server_kwargs: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The chat-template kwargs the server renders with, built as vLLM 0.26.0 builds them
    (ChatCompletionRequest.build_chat_params, then with_defaults, both through merge_kwargs): the
    server's `--default-chat-template-kwargs` under the request's `chat_template_kwargs` (a
    request's None or "auto" leaves the default), and a top-level `reasoning_effort` added as
    `reasoning_effort` and, unless the request's kwargs name `enable_thinking`, as
    `enable_thinking = effort != "none"`."""
    raw = body.get("chat_template_kwargs")
    request: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    served = {**(server_kwargs or {})}
    served |= {key: value for key, value in request.items() if not _unset(value)}
    top = body.get("reasoning_effort")
    if isinstance(top, str):
        if not _unset(top):
            served["reasoning_effort"] = top
        if "enable_thinking" not in request:
            served["enable_thinking"] = top != EFFORT_NONE
    return served


def _unset(value: Any) -> bool:
    return any(value is unset or value == unset for unset in UNSET)


def thinking_asked(
    body: Mapping[str, Any], server_kwargs: Mapping[str, Any] | None = None
) -> ThinkingAsk:
    """Read a chat request's thinking the server's way; `server_kwargs` is the server's
    `--default-chat-template-kwargs` (a request's own keys win, as the recipe notes).

    Thinking is on when any switch key of the served kwargs is on (DeepSeek V4's renderer and
    parser read `thinking or enable_thinking`), off when the switch keys present are all off.
    A switch is read by its truth, as the renderers read it: the text "false" is on (flagged in
    `text_switches`). With no switch, a reasoning_effort decides ('none' off, any other on): vLLM
    0.26.0 renders an effort inside the kwargs alone in chat mode, but report 004 saw that body
    reason (field notes: agent-benchmark-request), and reading it as reasoning only keeps stop
    strings from the upstream."""
    server = server_kwargs or {}
    served = served_kwargs(body, server)
    from_request = served_kwargs(body)
    raw_effort = served.get("reasoning_effort")
    effort = raw_effort if isinstance(raw_effort, str) else None
    switches = {key: bool(served[key]) for key in SWITCH_KEYS if key in served}
    thinking: bool | None
    if switches:
        thinking = any(switches.values())
        deciding = [key for key, value in switches.items() if value is thinking]
        inherited = all(key not in from_request for key in deciding)
    elif effort is not None:
        thinking = effort != EFFORT_NONE
        inherited = "reasoning_effort" not in from_request
    else:
        thinking, inherited = None, False
    none_with_thinking = effort == EFFORT_NONE and thinking is True
    own = {bool(from_request[key]) for key in SWITCH_KEYS if key in from_request}
    conflict = len(own) == 2 and not none_with_thinking
    texts = tuple(key for key in SWITCH_KEYS if isinstance(from_request.get(key), str))
    return ThinkingAsk(thinking, effort, inherited, none_with_thinking, conflict, texts)
