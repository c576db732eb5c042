"""The few shell commands the launcher runs on a node, and pure parsers of their output.

Every node is reached through a `CommandRunner` (local, netns, ssh), so each action is one
POSIX `sh -c` script: start detached and print the pid and its /proc start time; observe a
process (alive, log size, port open, log tail) in one round trip; stop a pid only while its start
time still matches the record, so a reused pid is never signalled.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from sparkrig.errors import LaunchError
from sparkrig.outside_numbers import int_or_none
from sparkrig.process_exit import ProcessExit, from_shell_status

# /proc/PID/stat after the command name: field 3 (state) is first, field 22 (starttime) is 20th.
_STAT_AFTER_NAME = (
    'stat_of() { s=$(cat /proc/"$1"/stat 2>/dev/null) || return 0; echo "${s##*) }"; }'
)


class StartedProcess(BaseModel):
    model_config = ConfigDict(frozen=True)

    pid: int
    start_ticks: int
    session: int | None = None  # the setsid session it runs in: the wrapper's pid
    session_ticks: int | None = None  # the session leader's start time, when it could be read


class ProcessObservation(BaseModel):
    """One look at a started process from its node."""

    model_config = ConfigDict(frozen=True)

    alive: bool
    log_bytes: int
    port_open: bool | None
    tail: list[str]
    exit_status: int | None = None  # the shell's $? once the process ended: 128 + N for signal N
    log_quiet_s: int | None = None  # seconds since the log was last written, by the node's clock

    @property
    def ended(self) -> ProcessExit | None:
        return None if self.exit_status is None else from_shell_status(self.exit_status)

    @property
    def last_line(self) -> str:
        return self.tail[-1] if self.tail else ""


def exit_status_path(log_path: str) -> str:
    """Where the wrapper around a started process writes its `$?` when it ends."""
    return f"{log_path}.exit"


# Runs on the node as `sh -c WRAPPER sh LOG STATUS argv…`: starts argv in the background, writes
# its pid, waits for it, and writes its exit status (128 + N when signal N killed it), so a crash
# on any node is named by its signal, never a bare code.
_WRAPPER = (
    'log=$1; status=$2; shift 2; "$@" < /dev/null >> "$log" 2>&1 & '
    'echo $! > "$status.pid"; wait $!; echo $? > "$status"'
)
_PID_WAIT_STEPS = 100  # x 0.05 s: the wrapper writes the pid at once
PID_MAX = 4_194_304
"""PID_MAX_LIMIT of 64-bit Linux (include/linux/threads.h): no pid is larger."""


def start_script(argv: Sequence[str], env: dict[str, str], log_path: str) -> list[str]:
    """`sh -c` that starts argv detached (own session, stdin closed, output to the log) under a
    small wrapper that records its exit status, and prints `pid ticks` of the started process
    itself (env execs into it)."""
    folder = log_path.rsplit("/", 1)[0] if "/" in log_path else "."
    assignments = [f"{k}={v}" for k, v in env.items()]
    command = ["env", *assignments, *argv] if env else list(argv)
    log = shlex.quote(log_path)
    status = shlex.quote(exit_status_path(log_path))
    wrapped = shlex.join(["sh", "-c", _WRAPPER, "sh", log_path, exit_status_path(log_path)])
    script = (
        f"{_STAT_AFTER_NAME}\n"
        f"mkdir -p {shlex.quote(folder)} || exit 3\n"
        f": > {log} || exit 3\n"
        f"rm -f {status} {status}.pid\n"
        f"setsid {wrapped} {shlex.join(command)} < /dev/null > /dev/null 2>&1 &\n"
        f"i=0; while [ ! -s {status}.pid ] && [ $i -lt {_PID_WAIT_STEPS} ]; do "
        "sleep 0.05; i=$((i+1)); done\n"
        f'pid=$(cat {status}.pid 2>/dev/null)\necho "pid $pid"\necho "stat $(stat_of "$pid")"\n'
        'set -- $(stat_of "$pid"); if [ -n "$4" ]; then echo "session $4 $(stat_of "$4")"; fi\n'
    )
    return ["sh", "-c", script]


def parse_started(stdout: str) -> StartedProcess:
    pid = ticks = session = session_ticks = None
    for line in stdout.splitlines():
        key, _, value = line.partition(" ")
        if key == "pid" and (number := int_or_none(value, minimum=2, maximum=PID_MAX)) is not None:
            pid = number  # never 0, -1 or 1: signals to those reach whole process groups
        elif key == "stat":
            ticks = _ticks(value)
        elif key == "session":
            leader, _, leader_stat = value.partition(" ")
            session = int_or_none(leader, minimum=2, maximum=PID_MAX)
            session_ticks = _ticks(leader_stat)
    if pid is None:
        raise LaunchError(f"the start command printed no pid ({stdout.strip()!r}) — see the node")
    # a process that died before /proc was read keeps ticks -1: the first observation says dead
    return StartedProcess(
        pid=pid,
        start_ticks=ticks if ticks is not None else -1,
        session=session if session_ticks is not None else None,
        session_ticks=session_ticks,
    )


def _ticks(stat_rest: str) -> int | None:
    fields = stat_rest.split()
    if len(fields) < 20 or fields[0] in {"Z", "X"}:
        return None
    return int_or_none(fields[19], minimum=0)


def observe_script(
    pid: int, start_ticks: int, log_path: str, port: int | None, tail_lines: int
) -> list[str]:
    log = shlex.quote(log_path)
    port_check = (
        f"echo \"listen $(ss -Hltn 'sport = :{port}' 2>/dev/null | wc -l)\"\n" if port else ""
    )
    script = (
        f"{_STAT_AFTER_NAME}\n"
        f'echo "stat $(stat_of {pid})"\n'
        f'echo "size $(wc -c < {log} 2>/dev/null || echo -1)"\n'
        f'echo "exit $(cat {shlex.quote(exit_status_path(log_path))} 2>/dev/null)"\n'
        f'm=$(stat -c %Y {log} 2>/dev/null) && echo "quiet $(( $(date +%s) - m ))"\n'
        f"{port_check}"
        "echo tail\n"
        f"tail -n {tail_lines} {log} 2>/dev/null\n"
    )
    return ["sh", "-c", script]


def parse_observation(stdout: str, start_ticks: int, port: int | None) -> ProcessObservation:
    head, _, tail = stdout.partition("tail\n")
    values = dict(line.partition(" ")[::2] for line in head.splitlines() if line)
    ticks = _ticks(values.get("stat", ""))
    size = values.get("size", "-1").strip()
    listening = int_or_none(values.get("listen", ""), minimum=0)  # a count of `ss` lines
    status = values.get("exit", "").strip()
    log_bytes = int_or_none(size, minimum=0)  # -1: no log file yet
    return ProcessObservation(
        exit_status=int_or_none(status, minimum=0, maximum=255),
        log_quiet_s=int_or_none(values.get("quiet", "").strip(), minimum=0),
        alive=ticks is not None and ticks == start_ticks,
        log_bytes=-1 if log_bytes is None else log_bytes,
        port_open=None if port is None else bool(listening),  # unreadable: not shown open
        tail=[line.rstrip() for line in tail.splitlines() if line.strip()],
    )


def stop_script(
    pid: int,
    start_ticks: int,
    grace_s: float,
    session: int | None = None,
    session_ticks: int | None = None,
) -> list[str]:
    """SIGTERM the recorded process, SIGKILL it after the grace; then the same to what is left of
    its session (vLLM's engine core and workers outlive a killed API process or headless worker).
    The session is swept only while its number still names it: its leader alive with the
    recorded start time, or gone with members still holding the number (Linux reuses no pid a
    session still holds). Prints what happened."""
    checks = max(1, int(grace_s * 10))
    same = f'[ "$(ticks {pid})" = "{start_ticks}" ]'
    sweep = ""
    if session is not None and session_ticks is not None:
        sweep = (
            f'lead=$(ticks {session}); if [ "$lead" = gone ] || [ "$lead" = "{session_ticks}" ]; '
            "then for sig in TERM KILL; do n=0; for d in /proc/[0-9]*; do p=${d#/proc/}; "
            f'set -- $(stat_of "$p"); [ "$4" = "{session}" ] && [ "$1" != Z ] && '
            '[ "$p" != "$$" ] && kill -$sig "$p" 2>/dev/null && n=$((n+1)); done; '
            '[ $n -eq 0 ] && break; [ $sig = TERM ] && echo "stopped $n more of its session" '
            "&& sleep 2; done; fi\n"
        )
    script = (
        f"{_STAT_AFTER_NAME}\n"
        'ticks() { set -- $(stat_of "$1"); case "$1" in Z|X|\'\') echo gone;; '
        '*) shift 19; echo "$1";; esac; }\n'
        f"sweep() {{ {sweep.strip() or ':'}\n}}\n"
        f'if ! {same}; then sweep; echo "already stopped"; exit 0; fi\n'
        f"kill -TERM {pid} 2>/dev/null\n"
        f"i=0; while [ $i -lt {checks} ]; do {same} || {{ sweep; echo stopped; exit 0; }}; "
        "sleep 0.1; i=$((i+1)); done\n"
        f'kill -KILL {pid} 2>/dev/null; sweep; echo "killed after the grace period"\n'
    )
    return ["sh", "-c", script]


def which_script(binary: str) -> list[str]:
    return ["sh", "-c", f"command -v {shlex.quote(binary)} || echo missing"]


def port_in_use_script(port: int) -> list[str]:
    return ["sh", "-c", f"ss -Hltn 'sport = :{port}' 2>/dev/null | wc -l"]
