"""Which variable names and command-line flags hold secrets (pure): a plan, the launch state
and every JSON sparkrig prints show such a value as `HIDDEN`, and the diagnostics bundle
removes it (doctor/redact.py). The process itself still gets the real value."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

HIDDEN: Final = "[hidden]"
# a key or variable name that holds a secret: HF_TOKEN, VLLM_API_KEY, Authorization; not
# max_tokens or TOKENIZERS_PARALLELISM
SECRET_NAME: Final = re.compile(
    r"(?i)(?:^|[_-])(?:api[_-]?key|token|secret|password|passwd|authorization|cookie)$"
)
SECRET_FLAGS: Final = frozenset({"--api-key", "--hf-token", "--token", "--password"})


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def after_secret_flags(argv: Sequence[object]) -> set[int]:
    """The positions of argv that hold a secret flag's value (`--api-key K`: K's position);
    items that are not strings (a JSON list) are never flags."""
    positions: set[int] = set()
    for index, arg in enumerate(argv):
        if index not in positions and isinstance(arg, str) and arg in SECRET_FLAGS:
            positions.add(index + 1)
    return positions


def hide_secret_args(argv: Sequence[str]) -> list[str]:
    """argv with the value of every secret flag (`--api-key K` or `--api-key=K`) hidden."""
    values = after_secret_flags(argv)
    shown: list[str] = []
    for index, arg in enumerate(argv):
        flag, equals, _ = arg.partition("=")
        if index in values:
            shown.append(HIDDEN)
        elif equals and flag in SECRET_FLAGS:
            shown.append(f"{flag}={HIDDEN}")
        else:
            shown.append(arg)
    return shown
