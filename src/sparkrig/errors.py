"""Every error a user can cause or fix. Messages read `what happened — how to fix it`."""

from typing import Any


class SparkrigError(Exception):
    """Base for errors the CLI prints in one line and exits non-zero on."""

    exit_code = 1


class UsageError(SparkrigError):
    """Bad input on the command line or in a config."""

    exit_code = 2


class ModelError(SparkrigError):
    """A model file is missing, not GGUF, or fails its checksum."""


class EngineNotFoundError(SparkrigError):
    """The engine binary is missing or not executable."""


class EngineBuildError(SparkrigError):
    """Building the embedded engine from source failed."""


class LaunchError(SparkrigError):
    """An engine process could not be started or never became ready."""


class PortInUseError(LaunchError):
    """The requested port is taken by another process."""


class StateError(SparkrigError):
    """The record of started processes is missing or unreadable."""


class EndpointError(SparkrigError):
    """An endpoint could not be reached or answered something unusable."""


class MetricsError(EndpointError):
    """A /metrics text could not be parsed."""


class ConfigError(UsageError):
    """A cluster file is missing, is not valid TOML, or does not match the cluster model."""


class CablingError(ConfigError):
    """The cables, nodes or tensor-parallel size cannot form the fabric the file asks for."""


class FabricError(SparkrigError):
    """Applying, restoring or discovering the fabric on real hosts failed."""


class ExecutorError(FabricError):
    """A command could not be run on a node (no such namespace, ssh failed, timeout)."""


# --- message shape -------------------------------------------------------------------------------

EXCERPT_CHARS = 200
"""Server bodies and file contents are quoted up to this many characters, never in full."""


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with the cut marked and its size named."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit]}… ({len(text)} characters, cut)"


def one_line(message: str) -> str:
    """A message with its line breaks folded, so it prints as one line."""
    return " ".join(part.strip() for part in message.splitlines() if part.strip())


def validation_problem(exc: Any) -> str:
    """The first problem of a pydantic ValidationError as `field: problem (got X)`, without
    pydantic's multi-line dump and its URL; `(and N more)` when there are several."""
    errors = exc.errors()
    first = errors[0]
    field = ".".join(str(part) for part in first["loc"]) or exc.title
    reason = str(first["msg"]).removeprefix("Value error, ")
    got = first.get("input")
    shown = "" if isinstance(got, (dict, list)) else f" (got {excerpt(repr(got), 60)})"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{field}: {reason}{shown}{more}"
