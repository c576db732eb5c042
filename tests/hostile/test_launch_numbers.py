"""Hostile numbers in what `up`, `status`, `logs` and `sync` read back from a node through its
executor (docs/errors.md, class 9): the pid and start ticks of a started process, the size,
exit status and quiet seconds of its log, the listening count of its port, the model file sizes
compared across nodes, the JIT cache survey and the GPU busy share. The output is the shape the
node scripts print (launch/node_commands.py, model_identity.py, cache_parity.py,
quiet_ranks.py) with one number made hostile; none becomes a number sparkrig acts on, and what
is not known reads as the cautious answer (dead, not open, differs, not read)."""

from __future__ import annotations

import pytest

from sparkrig.errors import LaunchError
from sparkrig.fabric.runner import CommandResult
from sparkrig.launch.cache_parity import parse_survey
from sparkrig.launch.model_identity import listing_differences, parse_listing
from sparkrig.launch.node_commands import parse_observation, parse_started
from sparkrig.launch.quiet_ranks import gpu_reading

HOSTILE = ["²", "٣", "１", "-5", "1e400", "nan", "inf", "9" * 200, "0x10", ""]

# `/proc/PID/stat` after the command name: state first, starttime (ticks) the 20th field
STAT = "S 1 4242 4242 0 -1 4194560 4471 0 0 0 1 0 0 0 20 0 1 0 {ticks} 1000 200"


@pytest.mark.parametrize("pid", [*HOSTILE, "0", "1", "-1", str(2**22 + 1)])
def test_a_pid_that_is_not_a_pid_is_one_line_never_a_process(pid: str) -> None:
    """0, -1 and 1 would signal whole process groups or init; past 2**22 no pid exists."""
    with pytest.raises(LaunchError, match="printed no pid") as caught:
        parse_started(f"pid {pid}\nstat {STAT.format(ticks=8123)}\n")
    assert " — " in str(caught.value)


@pytest.mark.parametrize("ticks", HOSTILE)
def test_start_ticks_that_are_not_ticks_read_as_dead(ticks: str) -> None:
    started = parse_started(f"pid 4242\nstat {STAT.format(ticks=ticks or 'x')}\n")
    assert (started.pid, started.start_ticks) == (4242, -1)  # the first observation: dead
    seen = parse_observation(f"stat {STAT.format(ticks=ticks or 'x')}\n", 8123, None)
    assert seen.alive is False


@pytest.mark.parametrize("value", HOSTILE)
def test_a_log_observation_with_hostile_numbers_trusts_none(value: str) -> None:
    stdout = (
        f"stat {STAT.format(ticks=8123)}\nsize {value}\nexit {value}\nquiet {value}\n"
        f"listen {value}\ntail\nINFO ready\n"
    )
    seen = parse_observation(stdout, 8123, port=8000)
    assert seen.alive is True  # the process itself is still the one started
    assert seen.log_bytes == -1  # no size known: as before the log exists
    assert seen.exit_status is None  # never an exit nor a signal made up
    assert seen.ended is None
    assert seen.log_quiet_s is None
    assert seen.port_open is False  # not shown open on a count that is not one
    assert seen.tail == ["INFO ready"]


@pytest.mark.parametrize("status", ["256", "-1", "1e3"])
def test_an_exit_status_a_shell_cannot_give_is_no_exit(status: str) -> None:
    seen = parse_observation(f"stat \nsize 10\nexit {status}\ntail\n", 8123, None)
    assert (seen.exit_status, seen.ended) == (None, None)
    assert parse_observation("stat \nexit 137\ntail\n", 8123, None).ended is not None


REFERENCE = {"config.json": 2, "model-00001-of-00002.safetensors": 10}


@pytest.mark.parametrize("size", HOSTILE)
def test_a_model_file_size_that_is_not_a_size_is_never_the_same_copy(size: str) -> None:
    """`find -printf '%s %P'` lines of node b with one size hostile: that file is not counted as
    present with some size, so `up` refuses and `sync` copies it, and it is named."""
    listing = parse_listing(f"2 config.json\n{size} model-00001-of-00002.safetensors\n")
    assert listing == {"config.json": 2}
    assert listing_differences(REFERENCE, listing) == [
        "lacks 1 file(s) (model-00001-of-00002.safetensors)"
    ]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_cache_survey_line_with_a_hostile_count_is_left_out(value: str) -> None:
    good = "cache VLLM_CACHE_ROOT 3 4096 abc123 /root/.cache/vllm"
    survey = parse_survey(f"{good}\ncache TRITON_CACHE_DIR {value} {value} def /root/.triton\n")
    assert list(survey) == ["VLLM_CACHE_ROOT"]
    assert (survey["VLLM_CACHE_ROOT"].files, survey["VLLM_CACHE_ROOT"].bytes) == (3, 4096)


@pytest.mark.parametrize("percent", [*HOSTILE, "101"])
def test_a_gpu_busy_share_that_is_not_a_share_is_not_read(percent: str) -> None:
    result = CommandResult(argv=["nvidia-smi"], returncode=0, stdout=f"0, {percent}\n", stderr="")
    reading = gpu_reading("spark1", result)
    assert reading.busy_percent is None
    assert "GPU not read: nvidia-smi on spark1" in reading.note
    busy = CommandResult(argv=["nvidia-smi"], returncode=0, stdout="0, 97\n1, 3\n", stderr="")
    assert gpu_reading("spark1", busy).busy_percent == 97
