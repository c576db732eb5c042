"""The `sparkrig` command: thin wiring of typer commands onto the packages, one module per stage.

Each module registers its commands on the shared app when imported; importing a stage's package
happens inside the command that needs it, so `sparkrig --help` stays fast.
"""

# ruff: noqa: I001 - the modules register their commands in the order --help lists them:
# the pipeline, from plan and launch to speed and guards

from __future__ import annotations

from sparkrig.cli.common import app
from sparkrig.cli.help_text import reflow_help
from sparkrig.cli import engine, serve, cluster_file, client, bench, check, soak  # noqa: F401
from sparkrig.cli import diag, doctor, fabric, fabric_test, gateway, stall, workload  # noqa: F401 - fabric_test registers `fabric test`

app.add_typer(fabric.fabric_app, name="fabric")
app.add_typer(gateway.gateway_app, name="gateway")
app.add_typer(workload.workload_app, name="workload")
reflow_help(app)

__all__ = ["app", "main"]


def main() -> None:
    """The console script; every failure becomes one line in `cli/one_line.py`."""
    from sparkrig.launch.signals import stop_cleanly_on_sigterm

    stop_cleanly_on_sigterm()
    app()
