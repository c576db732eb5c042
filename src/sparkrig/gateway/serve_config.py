"""`gateway serve`'s settings: a TOML file, then command-line flags on top. Every feature can be
switched off. docs/gateway.md shows a full file."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sparkrig import defaults
from sparkrig.config.toml_numbers import check_toml_numbers
from sparkrig.errors import ConfigError
from sparkrig.gateway.reasoning_fields import ReasoningKeys
from sparkrig.json_files import read_text_file
from sparkrig.outside_numbers import COUNT_LIMIT
from sparkrig.wire.reasoning_families import ThinkingAsk, thinking_asked

ReasoningMode = Literal["auto", "on", "off"]


class ServeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = Field(default=defaults.LOCAL_HOST, description="address to listen on")
    port: int = Field(default=0, ge=0, le=65535, description="port to listen on; 0: a free one")
    reasoning: ReasoningMode = Field(
        default="auto",
        description="which chat requests are reasoning ones: 'on' every chat request (unless it "
        "turns thinking off), 'off' none, 'auto' those whose thinking is on: a family's switch in "
        "chat_template_kwargs (thinking, enable_thinking), a reasoning_effort at the top level or "
        "inside chat_template_kwargs, or the server's default_chat_template_kwargs; or that name "
        "a reasoning_models model",
    )
    server_chat_template_kwargs: dict[str, bool | str] = Field(
        default_factory=dict,
        description="the upstream's --default-chat-template-kwargs (a cluster profile's "
        "default_chat_template_kwargs): a request that sets no switch inherits them",
    )
    reasoning_models: list[str] = Field(
        default_factory=list, description="model names (shell globs) that always reason"
    )
    stops_on_content: bool = Field(
        default=True,
        description="for a reasoning request, hold the stop strings back from the upstream and "
        "apply them here to the content only",
    )
    normalise_reasoning: bool = Field(
        default=True,
        description="give the reasoning under reasoning_keys, whatever key the upstream used",
    )
    reasoning_keys: ReasoningKeys = Field(
        default="both",
        description="where the client reads reasoning; a request's X-Reasoning-Key header wins",
    )
    template_opens_think: bool = Field(
        default=False,
        description="the upstream's chat template opens <think> in the prompt, so a reply's text "
        "is reasoning until </think> (only used when the upstream leaves tags in the content)",
    )
    live_guards: bool = Field(default=True, description="run the cheap detectors on every reply")
    guard_log: Path | None = Field(default=None, description="JSONL of detector findings")
    workload_log: Path | None = Field(default=None, description="JSONL, one line per request")
    record_prompts: bool = Field(
        default=False, description="put the prompt text in the workload log (off: counts only)"
    )
    stretch: float = Field(
        default=0.0,
        ge=0,
        le=defaults.GATEWAY_MAX_STRETCH,
        description="deliver every reply this share slower than the upstream made it (0.1: "
        "first token and every token gap 10% later); for benchmarks, off (0) in service",
    )
    stretch_first: int = Field(
        default=0,
        ge=0,
        le=COUNT_LIMIT,
        description="stretch only the first N generation requests (0: every one): a freshly "
        "started engine that runs slow for its first requests (docs/field-notes.md#"
        "warmup-penalty), to prove a bench's cold flag and warm-up",
    )
    drain_s: float = Field(
        default=defaults.GATEWAY_DRAIN_S,
        ge=0,
        le=defaults.GATEWAY_MAX_DRAIN_S,
        description="SIGTERM: time in-flight replies get",
    )

    def thinking_of(self, body: dict[str, Any]) -> ThinkingAsk:
        """The request's thinking as the upstream reads it, server defaults included."""
        return thinking_asked(body, self.server_chat_template_kwargs)

    def is_reasoning_request(self, body: dict[str, Any]) -> bool:
        if self.reasoning == "off":
            return False
        thinking = self.thinking_of(body).thinking
        if thinking is False:
            return False
        if self.reasoning == "on" or thinking is True:
            return True
        model = body.get("model")
        return isinstance(model, str) and any(
            fnmatch.fnmatchcase(model, pattern) for pattern in self.reasoning_models
        )


def load_serve_config(path: Path | None, overrides: dict[str, Any]) -> ServeConfig:
    """The file's settings (none: defaults), then every override that is not None."""
    data: dict[str, Any] = {}
    if path is not None:
        text = read_text_file(
            path,
            what="gateway settings file",
            error=ConfigError,
            fix="pass the path of a TOML settings file (docs/gateway.md)",
        )
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML ({exc}) — fix the file") from exc
        within: tuple[str, ...] = ("gateway",) if "gateway" in data else ()
        data = data.get("gateway", data)
        # before the model: its ge=0 lets inf and a 400-digit integer by
        check_toml_numbers(data, ServeConfig, text=text, source=str(path), loc=within)
    data.update({key: value for key, value in overrides.items() if value is not None})
    try:
        return ServeConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(file)"
        source = str(path) if path else "the command line"
        raise ConfigError(
            f"{source}: {where}: {first['msg']} — see docs/gateway.md for the settings"
        ) from exc
