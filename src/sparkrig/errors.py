"""Every error a user can cause or fix. Messages read `what happened — how to fix it`."""


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
