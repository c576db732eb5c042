"""Does a `vllm serve` argv parse in a given vLLM release? Judged from that release's own parser
(`sparkrig.engines.vllm.knowledge`), the way its FlexibleArgumentParser reads it: `--flag value`
or `--flag=value`, underscores in a flag's name read as dashes, `--json-flag.key value` for a key
of a JSON-valued flag, a short option glued to its value (`-O3`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sparkrig.engines.vllm.knowledge import (
    FlagSpec,
    VllmKnowledge,
    knowledge_for,
    known_versions,
)


@dataclass(frozen=True)
class ArgvProblem:
    kind: Literal["unknown-flag", "invalid-choice", "missing-value"]
    flag: str
    value: str | None = None
    choices: tuple[str, ...] = ()


def _lookup(token: str, knowledge: VllmKnowledge) -> tuple[FlagSpec | None, str, str | None]:
    """The spec a flag token names, its canonical spelling, and a value glued to it."""
    name, _, glued_text = token.partition("=")
    glued = glued_text if "=" in token else None
    if name.startswith("--"):
        name = "--" + name[2:].replace("_", "-")
        spec = knowledge.flags.get(name)
        if spec is None and "." in name:  # --compilation-config.mode 3
            spec = knowledge.flags.get(name.split(".", 1)[0])
        return spec, name, glued
    spec = knowledge.flags.get(name)
    if spec is None:  # -O3: a short option and its value in one token
        short = next((o for o in knowledge.flags if len(o) == 2 and name.startswith(o)), None)
        if short is not None:
            return knowledge.flags[short], short, name[len(short) :]
    return spec, name, glued


def serve_argv_problems(options: list[str], knowledge: VllmKnowledge) -> list[ArgvProblem]:
    """What the release's parser refuses in the options of `vllm serve MODEL` (no binary, no
    `serve`, no model)."""
    problems: list[ArgvProblem] = []
    index = 0
    while index < len(options):
        token = options[index]
        index += 1
        if not token.startswith("-"):
            problems.append(ArgvProblem("unknown-flag", token))
            continue
        spec, name, value = _lookup(token, knowledge)
        if spec is None:
            problems.append(ArgvProblem("unknown-flag", name))
            continue
        if not spec.takes_value or value is not None:
            pass
        elif index < len(options) and not options[index].startswith("--"):
            value = options[index]
            index += 1
        else:
            problems.append(ArgvProblem("missing-value", name))
            continue
        if spec.choices is not None and value is not None and value not in spec.choices:
            problems.append(ArgvProblem("invalid-choice", name, value, spec.choices))
    return problems


def first_accepting(problem: ArgvProblem) -> str | None:
    """The oldest release with committed data whose parser takes what `problem` names."""
    for version in known_versions():
        spec = knowledge_for(version).flags.get(problem.flag)
        if spec is None:
            continue
        if problem.value is None or spec.choices is None or problem.value in spec.choices:
            return version
    return None


def describe(problem: ArgvProblem, version: str) -> str:
    accepted = first_accepting(problem)
    since = (
        f"accepted from vLLM {accepted}"
        if accepted is not None
        else f"in none of the releases sparkrig knows ({', '.join(known_versions())})"
    )
    if problem.kind == "unknown-flag":
        return f"vLLM {version} has no option {problem.flag} ({since})"
    if problem.kind == "missing-value":
        return f"{problem.flag} needs a value in vLLM {version}"
    return (
        f"{problem.flag} {problem.value}: invalid choice in vLLM {version} ({since}; "
        f"{version} takes {', '.join(problem.choices)})"
    )
