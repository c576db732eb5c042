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


class ConfigError(UsageError):
    """A cluster file is missing, is not valid TOML, or does not match the cluster model."""


class CablingError(ConfigError):
    """The cables, nodes or tensor-parallel size cannot form the fabric the file asks for."""


class FabricError(SparkrigError):
    """Applying, restoring or discovering the fabric on real hosts failed."""


class ExecutorError(FabricError):
    """A command could not be run on a node (no such namespace, ssh failed, timeout)."""
