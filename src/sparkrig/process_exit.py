"""How an engine process ended, in words: never a bare negative exit code.

`subprocess` reports death by signal N as returncode -N; a shell's `wait` reports it as 128 + N.
Both become the signal's name, what it usually means for an inference engine, and the fix.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

PORTABLE_REBUILD_COMMAND = "sparkrig engine install --portable"
_SHELL_SIGNAL_BASE = 128

# What each signal usually means when it kills an inference engine, and what to do about it.
_MEANINGS: dict[int, tuple[str, str]] = {
    signal.SIGILL: (
        "illegal instruction: the engine uses a CPU instruction this machine refuses (a build "
        "for another CPU, or a VM that hides a feature its CPU advertises, such as AMX)",
        f"rebuild a portable engine: `{PORTABLE_REBUILD_COMMAND}`",
    ),
    signal.SIGSEGV: (
        "segmentation fault: the engine read memory it does not own (a bug, or a corrupt model)",
        "check the model file's checksum and the engine log; try another engine build",
    ),
    signal.SIGBUS: (
        "bus error: a memory-mapped file became unreadable (the model file changed or its disk "
        "went away)",
        "keep the model on a local disk and do not rewrite it while it is served",
    ),
    signal.SIGABRT: (
        "aborted: the engine stopped itself on a failed assertion",
        "read the last lines of the engine log for the assertion",
    ),
    signal.SIGFPE: (
        "arithmetic error in the engine",
        "read the engine log; try another engine build",
    ),
    signal.SIGKILL: (
        "killed: often the kernel's out-of-memory killer",
        "check `dmesg` for 'Out of memory' and lower the context or the model size",
    ),
    signal.SIGTERM: (
        "asked to stop (SIGTERM) by another process",
        "find what stopped it (a service manager, `sparkrig down`, a user)",
    ),
}


@dataclass(frozen=True)
class ProcessExit:
    """The end of a process: an exit status, or the signal that killed it."""

    exit_code: int | None = None
    signal_number: int | None = None

    @property
    def signal_name(self) -> str | None:
        if self.signal_number is None:
            return None
        try:
            return signal.Signals(self.signal_number).name
        except ValueError:
            return f"signal {self.signal_number}"

    @property
    def crashed(self) -> bool:
        """Died by a signal it did not ask for (not a stop sparkrig or a user sent)."""
        return self.signal_number is not None and self.signal_number not in {
            signal.SIGTERM,
            signal.SIGINT,
        }

    @property
    def illegal_instruction(self) -> bool:
        return self.signal_number == signal.SIGILL

    def describe(self) -> str:
        """`killed by SIGILL (illegal instruction: …)` or `exited with status 1`."""
        if self.signal_number is None:
            return f"exited with status {self.exit_code}"
        meaning = _MEANINGS.get(self.signal_number)
        detail = f" ({meaning[0]})" if meaning else ""
        return f"killed by {self.signal_name}{detail}"

    def fix(self) -> str | None:
        """The fix for this way of dying, when there is a known one."""
        if self.signal_number is None:
            return None
        meaning = _MEANINGS.get(self.signal_number)
        return meaning[1] if meaning else None


def from_returncode(returncode: int) -> ProcessExit:
    """From `subprocess`: negative means killed by that signal."""
    if returncode < 0:
        return ProcessExit(signal_number=-returncode)
    return ProcessExit(exit_code=returncode)


def from_shell_status(status: int) -> ProcessExit:
    """From a POSIX shell's `$?` after `wait`: above 128 means killed by signal status - 128."""
    if status > _SHELL_SIGNAL_BASE:
        return ProcessExit(signal_number=status - _SHELL_SIGNAL_BASE)
    return ProcessExit(exit_code=status)
