"""The README's two pictures, made from a real run in a real browser: the check table of the local
tutorial's baseline check, drawn by the command's own table code, and the first screen of the
HTML report that run wrote. Each picture records a digest of the code that draws it
(docs/img/pictures.json); when that code changes, test_the_pictures_are_current fails until the
pictures are made again:
`SPARKRIG_REFRESH_PICTURES=1 .venv/bin/pytest tests/docs -k local_tutorial`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from rich.console import Console

from sparkrig.cli.views.check_table import check_table
from sparkrig.guards.receipt import load_check_receipt
from tests.report.browser import view_page

ROOT = Path(__file__).resolve().parents[2]
PICTURES = ROOT / "docs" / "img"
RECORD = PICTURES / "pictures.json"
REFRESH_ENV = "SPARKRIG_REFRESH_PICTURES"
REPORT_HEIGHT = 900


def drawn_by() -> dict[str, list[Path]]:
    return {
        "check-table.png": [ROOT / "src" / "sparkrig" / "cli" / "views" / "check_table.py"],
        "report.png": sorted((ROOT / "src" / "sparkrig" / "report").glob("*.py")),
    }


def digests(drawers: dict[str, list[Path]] | None = None, root: Path = ROOT) -> dict[str, str]:
    """Each picture's digest of the code that draws it (default: drawn_by())."""
    found = {}
    for picture, sources in (drawers or drawn_by()).items():
        digest = hashlib.sha256()
        for source in sources:
            digest.update(source.relative_to(root).as_posix().encode())
            digest.update(source.read_bytes())
        found[picture] = digest.hexdigest()
    return found


def make_pictures(
    check_receipt: Path, report: Path, folder: Path, chromium: str
) -> dict[str, Path]:
    """Both pictures into `folder`; with SPARKRIG_REFRESH_PICTURES set, into docs/img too."""
    with open(os.devnull, "w") as nowhere:
        console = Console(record=True, width=150, color_system="truecolor", file=nowhere)
        console.print(check_table(load_check_receipt(check_receipt)))
    table_page = folder / "check-table.html"
    html = console.export_html(inline_styles=True)  # the run's state folder as a user's reads
    html = html.replace(str(folder / "state"), "~/.local/state/sparkrig")
    table_page.write_text(html, encoding="utf-8")
    made = {
        "check-table.png": view_page(table_page, chromium).screenshot,
        "report.png": view_page(report, chromium, height=REPORT_HEIGHT).screenshot,
    }
    written = {}
    for name, png in made.items():
        (folder / name).write_bytes(png)
        written[name] = folder / name
    if os.environ.get(REFRESH_ENV):
        for name, png in made.items():
            (PICTURES / name).write_bytes(png)
        RECORD.write_text(json.dumps(digests(), indent=1) + "\n", encoding="utf-8")
    return written
