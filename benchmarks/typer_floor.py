"""Install pyproject.toml's typer floor on its own and run sparkrig's CLI under it; write the
names that version provides to tests/fixtures/typer/names.txt (tests/cli/test_typer_floor.py
checks every typer name sparkrig uses against that list, without a download in CI).

The floor goes into a scratch folder with `pip install --target --no-deps`, put first on
PYTHONPATH, so the CLI runs on that typer and this environment's other packages.

    .venv/bin/python benchmarks/typer_floor.py            # the floor in pyproject.toml
    .venv/bin/python benchmarks/typer_floor.py 0.26.7     # another version, to compare
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cli.test_typer_floor import NAMES, typer_floor, used_names  # noqa: E402

# each run: the arguments, and what its output must contain
RUNS = [
    (["--help"], "Usage: sparkrig"),
    (["bench", "--nope"], "error: No such option: --nope (Possible options: --force, --model)"),
    (["report", "tests/fixtures/receipts/check-v1.json", "--out", "{tmp}/r.html"], "report"),
    ([], "Usage: sparkrig"),
]
_LISTING = """
import importlib, json, sys, typer
names = {}
for module in sys.argv[1:]:
    try:
        names[module] = sorted(dir(importlib.import_module(module)))
    except ImportError:
        names[module] = None
print(json.dumps({"version": typer.__version__, "names": names}))
"""


def main() -> int:
    version = sys.argv[1] if len(sys.argv) > 1 else typer_floor()
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "typer"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--target",
                str(target),
                f"typer=={version}",
            ],
            check=True,
        )
        env = {**os.environ, "PYTHONPATH": f"{target}{os.pathsep}{ROOT / 'src'}"}
        modules = sorted({module for module, _ in used_names()})
        listing = subprocess.run(
            [sys.executable, "-c", _LISTING, *modules],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if listing.returncode != 0:
            print(f"FAIL typer {version} does not import: {listing.stderr.strip()[-300:]}")
            return 1
        found = json.loads(listing.stdout)
        assert found["version"] == version, found["version"]
        failed = 0
        for args, expected in RUNS:
            argv = [a.replace("{tmp}", tmp) for a in args]
            done = subprocess.run(
                [sys.executable, "-m", "sparkrig", *argv],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            output = done.stdout + done.stderr
            ok = expected in output
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} sparkrig {' '.join(args)} (exit {done.returncode})")
            if not ok:
                print("     " + output.strip().replace("\n", "\n     ")[-600:])
    if version == typer_floor():
        lines = [f"# typer {version}", "# module attribute: what `dir(module)` lists there"]
        for module, names in sorted(found["names"].items()):
            if names is not None:
                lines += [module] + [f"{module} {name}" for name in names]
        NAMES.write_text("\n".join(lines) + "\n")
        print(f"wrote {NAMES.relative_to(ROOT)} ({len(lines) - 2} names)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
