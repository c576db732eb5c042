"""Every number read from outside goes through sparkrig/outside_numbers.py (docs/errors.md,
class 9): a call to `int(...)` or `float(...)` whose argument is not a literal, anywhere in
src/sparkrig but that module, must be in ALLOWED below, with the reason its argument is our own
data and not outside text. A new one fails with its file:line, so it is routed or explained."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "sparkrig"
PARSER = "outside_numbers.py"

# (file under src/sparkrig, the call's source text) -> why its argument is not outside text
ALLOWED: dict[tuple[str, str], str] = {
    ("local_process.py", "int(sock.getsockname()[1])"): "the port our own socket bound",
    ("cli/one_line.py", "int(exc.exit_code)"): "click's exit code, set by our own code",
    ("cli/common.py", "float(part)"): "command-line text; cli/common.py's ranges are class 1",
    ("cli/common.py", "int(part)"): "command-line text; cli/common.py's ranges are class 1",
    ("client/accumulate.py", "int(self._events[index]['t_ns'])"): "our own perf_counter_ns",
    ("wire/openai.py", "float(value)"): "a JSON number already bounded above (FLOAT_LIMIT)",
    ("bench/statistics.py", "float(value)"): "samples we measured",
    ("bench/statistics.py", "float(summary.n - 1)"): "a count of our own samples",
    ("bench/soak.py", "int(metrics_delta(before, after).server_restarted)"): "a bool",
    (
        "bench/speculative.py",
        "float(sum((value for value in values if isinstance(value, float | int))))",
    ): ("a sum of MetricsDelta values, already checked finite when /metrics was parsed"),
    ("guards/kv_facts.py", "int(digest[:8], 16)"): "a sha256 digest we computed",
    ("guards/needle.py", "int(depth * len(sentences))"): "our own placement arithmetic",
    ("launch/node_commands.py", "int(grace_s * 10)"): "a grace period checked as an option",
    ("engines/llamacpp/self_test.py", "int(response.status)"): "urllib's status, an int",
    ("fabric/probe.py", "int(word)"): "16-bit words struct.unpack made of our own packet",
    ("fabric/collectives/worker.py", "int(port)"): (
        "runs on the node with the standard library only; the port is the one we passed it"
    ),
    ("fabric/collectives/worker.py", "int(fields[0])"): (
        "the worker's own /proc/net/dev in its namespace; standard library only, and its JSON "
        "lines are read back as JSON by launch/fabric_test_run.py"
    ),
    ("fabric/collectives/worker.py", "int(fields[8])"): "as int(fields[0])",
    ("fabric/collectives/worker.py", "int(s)"): "its --sizes argument, written by us",
    ("report/svg_charts.py", "int(width_px / _CHAR_PX)"): "our own layout arithmetic",
    ("report/svg_charts.py", "float(WIDTH - _RIGHT)"): "constants",
    ("report/svg_charts.py", "float(_TOP + _PLOT_H)"): "constants",
    ("report/telemetry_html.py", "float(sum(s.roce_errors.values()))"): "a parsed receipt",
    ("report/telemetry_html.py", "float(value)"): "a parsed receipt's validated field",
    ("doctor/live.py", "float(value)"): "the cluster file's own validated setting",
}


def number_calls(root: Path) -> dict[tuple[str, str], list[int]]:
    """(file, call source) -> lines, for every int(...)/float(...) of a non-literal."""
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative == PARSER:
            continue
        text = path.read_text()
        for node in ast.walk(ast.parse(text, str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"int", "float"}
                and node.args
                and not all(isinstance(arg, ast.Constant) for arg in node.args)
            ):
                source = ast.unparse(node)
                found.setdefault((relative, source), []).append(node.lineno)
    return found


def test_every_int_or_float_of_outside_text_goes_through_the_parser() -> None:
    found = number_calls(SRC)
    new = sorted(
        f"  src/sparkrig/{file}:{line}: {source}"
        for (file, source), lines in found.items()
        if (file, source) not in ALLOWED
        for line in lines
    )
    assert not new, (
        "int()/float() of a value that may come from outside — parse it with "
        "sparkrig.outside_numbers, or add it to ALLOWED in tests/test_outside_numbers_only.py "
        "with why it is our own data:\n" + "\n".join(new)
    )
    gone = sorted(f"  {file}: {source}" for file, source in set(ALLOWED) - set(found))
    assert not gone, "these ALLOWED entries are gone — remove them:\n" + "\n".join(gone)


def test_the_checker_finds_a_planted_call(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = int('3')\ny = float(text)\nz = int(2.5)\n")
    (tmp_path / PARSER).write_text("v = int(text)\n")
    assert number_calls(tmp_path) == {("a.py", "float(text)"): [2]}
