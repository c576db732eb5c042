"""The `sparkrig` command: thin wiring of typer commands onto the packages, one module per stage.

Each module registers its commands on the shared app when imported; importing a stage's package
happens inside the command that needs it, so `sparkrig --help` stays fast.
"""

# ruff: noqa: I001 - the modules register their commands in the order --help lists them:
# the pipeline, from plan and launch to speed and guards

from __future__ import annotations

import sys

from rich.markup import escape

from sparkrig.cli.common import app, err_console
from sparkrig.cli import engine, serve, client, bench, check, soak  # noqa: F401
from sparkrig.cli import fabric, gateway
from sparkrig.errors import SparkrigError

app.add_typer(fabric.fabric_app, name="fabric")
app.add_typer(gateway.gateway_app, name="gateway")

__all__ = ["app", "main"]


def main() -> None:
    from sparkrig.launch.signals import stop_cleanly_on_sigterm

    stop_cleanly_on_sigterm()
    debug = "--debug" in sys.argv
    try:
        app()
    except SparkrigError as exc:
        if debug:
            raise
        # messages quote server text ("[/INST]" …): never let rich read it as markup
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
