"""Hostile files: every file sparkrig reads, in every way a file can be wrong. Each case fails in
one line naming the file and what to do, and leaves the file as it was."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sparkrig.engines.llamacpp.build import RECORD_NAME, install_dir
from sparkrig.json_files import WHOLE_FILE_LIMIT
from sparkrig.paths import STATE_ENV
from tests.hostile.conftest import one_line_failure, run_cli

EXAMPLES = Path(__file__).parents[2] / "examples"
NOBODY = 65534

Make = Callable[[Path], None]


def write(text: str) -> Make:
    return lambda path: path.write_text(text, encoding="utf-8")


def write_bytes(data: bytes) -> Make:
    return lambda path: path.write_bytes(data)


def write_json(value: object) -> Make:
    return write(json.dumps(value))


def make_directory(path: Path) -> None:
    path.mkdir()


def dangling_link(path: Path) -> None:
    path.symlink_to(path.with_name("nowhere.json"))


def link_loop(path: Path) -> None:
    path.symlink_to(path)


def nothing(path: Path) -> None:
    pass


def named_pipe(path: Path) -> None:
    os.mkfifo(path)  # no writer: opening it to read would wait forever


def endless_device(path: Path) -> None:
    path.symlink_to("/dev/zero")  # never ends: reading it whole would fill memory


def past_the_limit(path: Path) -> None:
    with path.open("wb") as handle:  # sparse: no disk used
        handle.truncate(WHOLE_FILE_LIMIT + 1)


# A damaged file of any kind: each way a file can be wrong, and a word the message must hold.
BROKEN: dict[str, tuple[Make, str]] = {
    "missing": (nothing, "does not exist"),
    "directory": (make_directory, "is a directory"),
    "not-utf8": (write_bytes(b"\xff\xfe\x00{"), "not UTF-8"),
    "empty": (write(""), "not JSON"),
    "bad-json": (write('{"kind": '), "not JSON"),
    "trailing-garbage": (write('{"a": 1} trailing'), "not JSON"),
    "deep-nesting": (write("[" * 100_000), "JSON"),
    "list": (write_json([1, 2]), "a JSON list"),
    "string": (write_json("receipt"), "a JSON string"),
    "number": (write_json(42), "a JSON number"),
    "null": (write_json(None), "JSON null"),
    "dangling-link": (dangling_link, "does not exist"),
    "link-loop": (link_loop, "link"),
    "named-pipe": (named_pipe, "is a named pipe"),
    "endless-device": (endless_device, "is a character device"),
    "past-the-limit": (past_the_limit, "more than the 1 GiB"),
}

NOW = "2026-12-01T10:00:00+00:00"
NAIVE = "2026-12-01T10:00:00"


def bench_receipt(**fields: object) -> dict[str, object]:
    receipt: dict[str, object] = {
        "kind": "sparkrig-bench",
        "schema_version": 1,
        "created_at": NOW,
        "base_url": "http://127.0.0.1:1",
        "model": "m",
        "suites": ["decode"],
        "settings": {},
    }
    receipt.update(fields)
    return receipt


def check_receipt() -> dict[str, object]:
    return {"kind": "sparkrig-check", "schema_version": 1, "base_url": "u", "model": "m"}


RECEIPTS: dict[str, tuple[Make, str]] = {
    **BROKEN,
    "check-receipt": (write_json(check_receipt()), "check receipt"),
    "baseline": (write_json({"kind": "sparkrig-check-baseline", "model": "m"}), "baseline"),
    "other-kind": (write_json({"kind": "something-else"}), "something-else"),
    "no-kind": (write_json({"points": []}), "another kind"),
    "schema-99": (write_json(bench_receipt(schema_version=99)), "schema 99"),
    "points-string": (write_json(bench_receipt(points="many")), "points"),
    "naive-timestamp": (write_json(bench_receipt(created_at=NAIVE)), "timezone"),
    "bad-timestamp": (write_json(bench_receipt(created_at="yesterday")), "created_at"),
    "missing-model": (
        write_json({k: v for k, v in bench_receipt().items() if k != "model"}),
        "model",
    ),
}


def snapshot(path: Path) -> object:
    """What a path holds now, to prove a failed command left it alone."""
    if path.is_symlink():
        return ("link", os.readlink(path))
    if path.is_dir():
        return ("dir", sorted(p.name for p in path.iterdir()))
    if not path.exists():
        return None
    if not path.is_file() or path.stat().st_size > 1 << 20:  # a pipe; a file past the limit
        return ("other", path.stat().st_mode, path.stat().st_size, path.stat().st_mtime_ns)
    return ("file", path.read_bytes())


@pytest.mark.parametrize("case", list(RECEIPTS))
def test_compare_names_a_broken_receipt(case: str, tmp_path: Path) -> None:
    make, says = RECEIPTS[case]
    broken = tmp_path / "before.json"
    make(broken)
    good = tmp_path / "after.json"
    write_json(bench_receipt())(good)
    before = snapshot(broken)

    line = one_line_failure(run_cli("compare", str(broken), str(good)), says)

    assert str(broken) in line or case == "missing"
    assert snapshot(broken) == before


REPORT_CASES = [
    "missing",
    "directory",
    "not-utf8",
    "bad-json",
    "list",
    "other-kind",
    "naive-timestamp",
    "schema-99",
]


@pytest.mark.parametrize("case", REPORT_CASES)
def test_report_names_a_broken_receipt_and_writes_nothing(case: str, tmp_path: Path) -> None:
    make, says = RECEIPTS[case]
    broken = tmp_path / "r.json"
    make(broken)

    one_line_failure(run_cli("report", str(broken), "--out", str(tmp_path / "r.html")), says)

    assert not (tmp_path / "r.html").exists()


@contextmanager
def as_nobody() -> Iterator[None]:
    """Run the block with the effective uid of `nobody`: root reads any file, a user does not."""
    groups = os.getgroups()
    os.setgroups([])  # root's groups would let the group bits decide
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(groups)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to nobody needs root")
@pytest.mark.parametrize("command", ["compare", "report"])
def test_an_unreadable_receipt_says_permission_denied(command: str, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    receipt = tmp_path / "r.json"
    write_json(bench_receipt())(receipt)
    receipt.chmod(0o600)
    args = (
        [command, str(receipt), str(receipt)]
        if command == "compare"
        else [command, str(receipt), "--out", "/tmp/never-written.html"]
    )
    run_cli(*args[:-1], str(tmp_path / "root.html"))  # as root: loads what it imports lazily
    with as_nobody():
        outcome = run_cli(*args)
    one_line_failure(outcome, "permission denied", str(receipt))


# --- records of started instances (status / down / logs) -------------------------------------


def instance(
    pid: object = 4_000_000,
    port: object = 8080,
    started_at: object = NOW,
    log_path: object = "/tmp/llama-1.log",
) -> dict[str, object]:
    """A local server's launch state as `up --local` writes it (launch/state.py)."""
    process = {
        "node": "llama-1",
        "role": "head",
        "name": "llama-server",
        "argv": ["llama-server"],
        "port": port,
        "ready_when": "health",
    }
    started = {
        "process": process,
        "executor": {"kind": "local"},
        "pid": pid,
        "pid_start_ticks": 1,
        "log_path": log_path,
        "started_at": started_at,
    }
    server = {"binary": "llama-server", "model": "/m.gguf", "alias": "m", "port": port}
    return {
        "schema_version": 2,
        "cluster": "llama-1",
        "api_url": f"http://127.0.0.1:{port}",
        "model_name": "m",
        "stall_window_s": 300.0,
        "started": [started],
        "planned": ["llama-1/llama-server"],
        "server": server,
    }


RECORDS: dict[str, tuple[Make, str]] = {
    "directory": (make_directory, "is a directory"),
    "not-utf8": (write_bytes(b"\x80\x81"), "not UTF-8"),
    "bad-json": (write("{"), "not JSON"),
    "list": (write_json([instance()]), "a JSON list"),
    "bench-receipt": (write_json(bench_receipt()), "bench receipt"),
    "naive-timestamp": (write_json(instance(started_at=NAIVE)), "timezone"),
    "pid-zero": (write_json(instance(pid=0)), "pid"),
    "pid-minus-one": (write_json(instance(pid=-1)), "pid"),
    "pid-init": (write_json(instance(pid=1)), "pid"),
    "port-zero": (write_json(instance(port=0)), "port"),
    "port-too-big": (write_json(instance(port=70000)), "port"),
    "pid-string": (write_json(instance(pid="many")), "pid"),
    "missing-field": (write_json({"cluster": "x"}), "damaged"),
    "older-sparkrig": (write_json({"name": "local-1", "pid": 4_000_000}), "older sparkrig"),
}


@pytest.mark.parametrize("case", list(RECORDS))
@pytest.mark.parametrize("command", [["status"], ["down", "--apply"]], ids=" ".join)
def test_a_broken_instance_record_is_named_and_kept(
    case: str, command: list[str], state: Path
) -> None:
    make, says = RECORDS[case]
    folder = state / "local"
    folder.mkdir()
    record = folder / "llama-1.json"
    make(record)
    before = snapshot(record)

    line = one_line_failure(run_cli(*command), says, str(record))

    assert "move" in line  # aside, never "delete"
    assert snapshot(record) == before


def test_a_local_launch_stopped_before_its_server_started(state: Path) -> None:
    """`up` killed between saving its state and starting the server leaves a state with nothing
    started: status shows it exited, logs says so in one line, down forgets it."""
    (state / "local").mkdir()
    record = instance()
    record["started"] = []
    write_json(record)(state / "local" / "llama-1.json")

    shown = run_cli("status", "--json")
    assert shown.code == 0, shown.stderr
    assert [(row["state"], row["pid"]) for row in json.loads(shown.stdout)] == [("exited", None)]
    one_line_failure(run_cli("logs"), "never started")
    assert run_cli("down", "--apply").code == 0
    assert not list((state / "local").glob("*.json"))


@pytest.mark.parametrize("case", ["bad-json", "pid-zero", "naive-timestamp"])
def test_logs_with_a_broken_record_is_one_line(case: str, state: Path) -> None:
    make, says = RECORDS[case]
    (state / "local").mkdir()
    make(state / "local" / "llama-1.json")
    one_line_failure(run_cli("logs"), says)


def test_logs_of_a_log_that_is_a_directory_is_one_line(state: Path, tmp_path: Path) -> None:
    (state / "local").mkdir()
    log = tmp_path / "log-dir"
    log.mkdir()
    write_json(instance(log_path=str(log)))(state / "local" / "llama-1.json")
    one_line_failure(run_cli("logs"), str(log))


# --- a started cluster's state, a fabric journal ----------------------------------------------

CLUSTER_STATES: dict[str, tuple[Make, str]] = {
    "directory": (make_directory, "is a directory"),
    "bad-json": (write("[{"), "not JSON"),
    "check-receipt": (write_json(check_receipt()), "check receipt"),
    "naive-timestamp": (
        write_json(
            {
                "cluster": "pair",
                "started": [
                    {
                        "process": {},
                        "executor": {"kind": "local"},
                        "pid": 5,
                        "pid_start_ticks": 1,
                        "log_path": "/tmp/x",
                        "started_at": NAIVE,
                    }
                ],
            }
        ),
        "damaged",
    ),
}


@pytest.mark.parametrize("case", list(CLUSTER_STATES))
@pytest.mark.parametrize("command", ["status", "down", "logs"])
def test_a_broken_cluster_state_is_named_and_kept(case: str, command: str, state: Path) -> None:
    make, says = CLUSTER_STATES[case]
    (state / "clusters").mkdir()
    path = state / "clusters" / "pair.json"
    make(path)
    before = snapshot(path)

    one_line_failure(run_cli(command, str(EXAMPLES / "pair.toml")), says, str(path))

    assert snapshot(path) == before


JOURNALS: dict[str, tuple[Make, str]] = {
    "missing": (nothing, "no fabric journal"),
    "directory": (make_directory, "is a directory"),
    "bad-json": (write("{{"), "not JSON"),
    "bench-receipt": (write_json(bench_receipt()), "bench receipt"),
    "naive-timestamp": (
        write_json({"cluster": "pair", "applied_at": NAIVE, "executors": {}}),
        "timezone",
    ),
    "entries-string": (
        write_json({"cluster": "pair", "applied_at": NOW, "executors": {}, "entries": "all"}),
        "entries",
    ),
}


@pytest.mark.parametrize("case", list(JOURNALS))
def test_restore_from_a_broken_journal_is_one_line(case: str, state: Path) -> None:
    make, says = JOURNALS[case]
    (state / "fabric").mkdir()
    path = state / "fabric" / "pair.json"
    make(path)
    before = snapshot(path)

    one_line_failure(run_cli("fabric", "apply", str(EXAMPLES / "pair.toml"), "--restore"), says)

    assert snapshot(path) == before


# --- the engine's record, a model file, a cluster file ----------------------------------------

ENGINE_RECORDS: dict[str, tuple[Make, str]] = {
    "directory": (make_directory, "is a directory"),
    "bad-json": (write("engine"), "not JSON"),
    "check-receipt": (write_json(check_receipt()), "check receipt"),
    "bin-dir-number": (write_json({"source": "x", "flags": [], "bin_dir": 5}), "bin_dir"),
}


@pytest.mark.parametrize("case", list(ENGINE_RECORDS))
def test_a_broken_engine_record_is_one_line(
    case: str, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPARKRIG_LLAMA_SERVER", raising=False)
    make, says = ENGINE_RECORDS[case]
    folder = install_dir()
    folder.mkdir(parents=True)
    make(folder / RECORD_NAME)

    line = one_line_failure(run_cli("engine", "info"), says)

    assert "engine install" in line


MODELS: dict[str, tuple[Make, str]] = {
    "missing": (nothing, "does not exist"),
    "directory": (make_directory, "is a directory"),
    "empty": (write(""), "not a GGUF"),
    "text": (write("hello, not a model"), "not a GGUF"),
    "safetensors-header": (write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}"), "not a GGUF"),
    "dangling-link": (dangling_link, "does not exist"),
}


@pytest.mark.parametrize("case", list(MODELS))
def test_a_model_that_is_not_gguf_is_one_line(case: str, tmp_path: Path, state: Path) -> None:
    make, says = MODELS[case]
    model = tmp_path / "model.gguf"
    make(model)

    one_line_failure(run_cli("up", "--local", "--model", str(model)), says)


CLUSTER_FILES: dict[str, tuple[Make, str]] = {
    "missing": (nothing, "does not exist"),
    "directory": (make_directory, "is a directory"),
    "not-utf8": (write_bytes(b'name = "\xff"'), "not UTF-8"),
    "json": (write_json({"name": "pair"}), "TOML"),
    "named-pipe": (named_pipe, "is a named pipe"),
    "endless-device": (endless_device, "is a character device"),
    "self-loop-port": (
        write('cables = ["a.p0 <-> a.p0"]\n[[nodes]]\nname = "a"\n[[nodes]]\nname = "b"\n'),
        "self-loop",
    ),
    "self-loop-node": (
        write('cables = ["a.p0 <-> a.p1"]\n[[nodes]]\nname = "a"\n[[nodes]]\nname = "b"\n'),
        "self-loop",
    ),
}


CLUSTER_FILE_CASES = [
    (command, case)
    for command in (["plan-capacity"], ["fabric", "plan"], ["fabric", "apply"])
    for case in CLUSTER_FILES
    if command[0] == "fabric" or not case.startswith("self-loop")  # capacity reads no cables
]


@pytest.mark.parametrize(
    ("command", "case"),
    CLUSTER_FILE_CASES,
    ids=[f"{' '.join(c)}-{case}" for c, case in CLUSTER_FILE_CASES],
)
def test_a_broken_cluster_file_is_one_line(case: str, command: list[str], tmp_path: Path) -> None:
    make, says = CLUSTER_FILES[case]
    path = tmp_path / "cluster.toml"
    make(path)

    one_line_failure(run_cli(*command, str(path)), says)


@pytest.mark.parametrize("case", ["self-loop-port", "self-loop-node"])
def test_lint_reports_a_self_loop_as_one(case: str, tmp_path: Path) -> None:
    CLUSTER_FILES[case][0](tmp_path / "cluster.toml")
    outcome = run_cli("lint", str(tmp_path / "cluster.toml"))
    assert outcome.code == 1
    assert "self-loop" in outcome.stdout
    assert "two cables" not in outcome.stdout


def test_the_state_folder_itself_being_a_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("not a folder")
    monkeypatch.setenv(STATE_ENV, str(blocker))
    one_line_failure(run_cli("status"))


# --- sysfs: a GID table that is broken in every way reads as "no GID", never a traceback -------


def gid_tree(root: Path, fill: Callable[[Path], None]) -> Path:
    port = root / "class" / "infiniband" / "rocep1s0f0" / "ports" / "1"
    for folder in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (port / folder).mkdir(parents=True)
    fill(port)
    return root


SYSFS: dict[str, Callable[[Path], None]] = {
    "empty-tables": lambda port: None,
    "gid-not-ascii": lambda port: (port / "gids" / "0").write_bytes(b"\xff\xfe\n"),
    "gid-not-an-address": lambda port: (port / "gids" / "0").write_text("fe80::zz\n"),
    "gid-is-a-folder": lambda port: (port / "gids" / "0").mkdir(),
    "type-is-a-folder": lambda port: (
        (port / "gids" / "0").write_text("0000:0000:0000:0000:0000:ffff:c0a8:6401\n"),
        (port / "gid_attrs" / "types" / "0").mkdir(),
    ),
    "odd-names": lambda port: (port / "gids" / "x1").write_text("::1\n"),
}


@pytest.mark.parametrize("case", list(SYSFS))
def test_a_broken_gid_table_reads_as_no_gid(case: str, tmp_path: Path) -> None:
    root = gid_tree(tmp_path / "sys", SYSFS[case])
    args = ["fabric", "gids", str(EXAMPLES / "pair.toml"), "--node", "spark1", "--json"]
    outcome = run_cli(*args, "--sysfs", str(root))
    assert outcome.code == 1
    assert "Traceback" not in outcome.stdout + outcome.stderr
    rows = json.loads(outcome.stdout)
    assert all(row["index"] is None and " — " in row["problem"] for row in rows)


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_sysfs_root_that_is_not_a_folder_is_one_line(kind: str, tmp_path: Path) -> None:
    root = tmp_path / "sys"
    if kind == "file":
        root.write_text("not sysfs")
    args = ["fabric", "gids", str(EXAMPLES / "pair.toml"), "--node", "spark1"]
    one_line_failure(run_cli(*args, "--sysfs", str(root)), "--sysfs")


def _owned_by_root_only(path: Path, content: str) -> Path:
    for parent in (path.parent, *path.parent.parents):
        if parent.stat().st_mode & 0o005 != 0o005:
            parent.chmod(parent.stat().st_mode | 0o005)  # nobody may walk to the file
    path.write_text(content)
    path.chmod(0o600)
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to nobody needs root")
@pytest.mark.parametrize("what", ["model", "cluster-file", "instance-record", "journal"])
def test_an_unreadable_file_says_permission_denied(what: str, tmp_path: Path, state: Path) -> None:
    if what == "model":
        path = _owned_by_root_only(tmp_path / "m.gguf", "GGUF")
        args = ["up", "--local", "--model", str(path)]
    elif what == "cluster-file":
        path = _owned_by_root_only(tmp_path / "c.toml", (EXAMPLES / "pair.toml").read_text())
        args = ["fabric", "plan", str(path)]
    elif what == "instance-record":
        (state / "local").mkdir()
        path = _owned_by_root_only(state / "local" / "llama-1.json", json.dumps(instance()))
        args = ["status"]
    else:
        (state / "fabric").mkdir()
        path = _owned_by_root_only(state / "fabric" / "pair.json", "{}")
        args = ["fabric", "apply", str(EXAMPLES / "pair.toml"), "--restore"]
    run_cli(*args)  # as root first: the modules it imports lazily are loaded (nobody cannot)
    with as_nobody():
        outcome = run_cli(*args)
    one_line_failure(outcome, "permission denied", str(path))


def _receipt_with_samples(values: list[float]) -> dict[str, object]:
    samples = [{"value": v, "requests": []} for v in values]
    point = {"suite": "decode", "name": "prose", "metric": "decode tok/s", "samples": samples}
    return bench_receipt(points=[point])


@pytest.mark.parametrize(
    ("values", "says"),
    [([float("nan"), 1.0], "value"), ([float("inf"), 1.0], "value"), (["fast", 1.0], "value")],
    ids=["nan", "infinity", "text"],
)
@pytest.mark.parametrize("command", ["compare", "report"])
def test_a_receipt_with_a_sample_that_is_not_a_number_is_damaged(
    command: str, values: list[float], says: str, tmp_path: Path
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_receipt_with_samples(values)))  # json writes NaN, Infinity
    args = [str(path), str(path)] if command == "compare" else [str(path), "--out", "x.html"]
    one_line_failure(run_cli(command, *args), "damaged", says)


def test_compare_with_a_zero_reference_says_no_percent_change(tmp_path: Path) -> None:
    path = tmp_path / "zero.json"
    path.write_text(json.dumps(_receipt_with_samples([0.0, 0.0, 0.0])))
    outcome = run_cli("compare", str(path), str(path), "--json")
    assert outcome.code == 0, outcome.stderr
    assert "no percent change" in outcome.stdout


def meta(value: object) -> Callable[[Path], None]:
    return lambda node: write_json(value)(node / "meta.json")


def probe_output(make: Make) -> Callable[[Path], None]:
    def made(node: Path) -> None:
        write_json({"probes": {"uname": {"command": "uname -a", "returncode": 0}}})(
            node / "meta.json"
        )
        make(node / "uname.out")

    return made


# A `doctor --save` folder damaged in each way: the node folder holds what each case makes.
CAPTURES: dict[str, tuple[Callable[[Path], None], str]] = {
    "meta-not-json": (lambda node: write("{bad")(node / "meta.json"), "not JSON"),
    "meta-a-list": (meta([1]), "a JSON list"),
    "meta-nan": (
        lambda node: write('{"probes": {"p": {"started_at": NaN}}}')(node / "meta.json"),
        "NaN",
    ),
    "probes-text": (meta({"probes": "all"}), "probes"),
    "probe-returncode-text": (
        meta({"probes": {"uname": {"command": "uname", "returncode": "zero"}}}),
        "probe 'uname'",
    ),
    "reached-by-number": (meta({"reached_by": 7}), "reached_by"),
    "output-not-utf8": (probe_output(write_bytes(b"Linux \xff")), "not UTF-8"),
    "output-named-pipe": (probe_output(named_pipe), "is a named pipe"),
}


@pytest.mark.parametrize("case", list(CAPTURES))
def test_doctor_load_names_a_damaged_capture(case: str, tmp_path: Path) -> None:
    make, says = CAPTURES[case]
    node = tmp_path / "captures" / "spark-a"
    node.mkdir(parents=True)
    make(node)

    line = one_line_failure(
        run_cli("doctor", str(EXAMPLES / "pair.toml"), "--load", str(tmp_path / "captures")), says
    )

    assert str(node) in line
