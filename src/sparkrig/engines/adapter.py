"""The one interface every engine implements, so the planner, the metrics reader, doctor and lint
ask the engine instead of branching on `engine.kind`. docs/architecture.md ("Adding an engine")
says what a new engine package provides and which tests hold it to this.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field

from sparkrig.config.serving import EngineSettings
from sparkrig.engines.launch_spec import LaunchContext, ProcessSpec
from sparkrig.engines.metric_map import EngineMetricMap
from sparkrig.frozen_model import FrozenModel
from sparkrig.process_exit import ProcessExit

BUNDLED_MODEL = "bundled"
"""`model.path` that names the bundled model (each engine's own form of it: the GGUF, or the
folder vLLM's CPU build converted it to)."""


class LocalEngine(FrozenModel):
    """What this machine provides for an engine whose cluster file names no binary: sparkrig's
    own build of it, the arguments that build needs here, and the bundled model."""

    binaries: tuple[str, str] | None = Field(
        default=None, description="the built server and RPC binaries; None when not built"
    )
    server_args: tuple[str, ...] = Field(
        default=(), description="what the built server needs to run here (self-test result)"
    )
    bundled_model: Path | None = Field(
        default=None, description="what `model.path = 'bundled'` means; None when unused"
    )


class SelfTestOutcome(BaseModel):
    """One self-test of one binary with one set of arguments."""

    binary: str
    repack: bool = Field(description="whether llama.cpp's CPU weight repacking was on")
    passed: bool
    seconds: float
    detail: str = Field(description="the completion's first words, or how the engine failed")
    signal_name: str | None = Field(default=None, description="the signal that killed it, if any")
    exit_code: int | None = None
    timed_out: bool = False
    log_path: str

    @property
    def process_exit(self) -> ProcessExit | None:
        if self.signal_name is not None:
            return ProcessExit(signal_number=signal.Signals[self.signal_name].value)
        if self.exit_code is not None:
            return ProcessExit(exit_code=self.exit_code)
        return None

    @property
    def crashed(self) -> bool:
        found = self.process_exit
        return found is not None and found.crashed

    def summary(self) -> str:
        repack = "repack on" if self.repack else "repack off"
        if self.passed:
            return f"passed ({repack}, {self.seconds:.1f} s)"
        return f"failed ({repack}): {self.detail}"


class EngineAdapter(Protocol):
    """One engine, as the rest of sparkrig sees it. Registered in `engines.registry.ENGINES`."""

    @property
    def kind(self) -> str:
        """`engine.kind` in a cluster file."""

    @property
    def metrics_name(self) -> str:
        """How metrics snapshots, receipts and process records name the engine."""

    @property
    def metric_prefix(self) -> str:
        """The prefix of its Prometheus names; a /metrics text with it comes from this engine."""

    @property
    def metric_map(self) -> EngineMetricMap:
        """Where each canonical quantity is read; a quantity left out reads as None."""

    @property
    def unsupported_settings(self) -> frozenset[str]:
        """`[profile]` keys the engine has no flag for: a launch plan warns, never drops them
        silently."""

    @property
    def collectives_over_nccl(self) -> bool:
        """Whether the ranks talk through NCCL (and so over RDMA where the fabric plan has it):
        a contained engine then gets the RDMA devices."""

    @property
    def every_rank_loads_weights(self) -> bool:
        """Whether every node reads the model from its own disk (vLLM), or the head alone and
        ships tensors to its workers (llama.cpp RPC): `up` compares the copies only then."""

    @property
    def model_folder_files(self) -> tuple[str, ...]:
        """Files a model folder must hold for this engine to start (vLLM: config.json); `up`
        checks every node that loads the weights before anything starts."""

    @property
    def serves_slots(self) -> bool:
        """Whether the server answers `/slots` (llama.cpp, each slot's context), where a live
        KV pool can be read when /metrics holds none; asking vLLM would only log a 404."""

    @property
    def jit_caches(self) -> tuple[tuple[str, str], ...]:
        """JIT cache variables and their folder under `engine.jit_cache_dir` (none: nothing
        compiles at start-up)."""

    def backend(self, engine: EngineSettings) -> str:
        """The multi-node backend a launch plan records (vLLM mp or ray; llama.cpp rpc)."""

    def binaries(self, engine: EngineSettings, local: LocalEngine) -> tuple[str, str | None]:
        """The server command on every node and the worker command, when workers run another
        binary: the cluster file's, else this machine's build, else the name on PATH."""

    def version_command(self, engine: EngineSettings) -> str | None:
        """The command doctor runs `--version` of on every node to compare versions; None when
        sparkrig installs the same build everywhere."""

    def python_command(self, engine: EngineSettings) -> str | None:
        """The command whose Python environment doctor lists; None for a static binary."""

    def render(self, context: LaunchContext) -> list[ProcessSpec]:
        """Every process of the cluster, in start order."""

    def local_engine(self, engine: EngineSettings, model_path: str) -> LocalEngine:
        """What this machine provides for a cluster file that names no binary (or the bundled
        model). Reads the build cache; starts nothing."""

    def self_test(self, binary: Path, log_stem: Path) -> SelfTestOutcome | None:
        """Start `binary` on a small model here, one completion, stop (logs beside `log_stem`);
        the deciding attempt, or None when the engine has no self-test (it needs hardware or
        weights sparkrig cannot provide)."""
