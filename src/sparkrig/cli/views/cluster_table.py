"""Terminal views of a cluster launch: the plan `up` prints and the `status` table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sparkrig.cli.views.forensics_view import boot_table, signature_lines
from sparkrig.launch.cluster_plan import LaunchPlan

if TYPE_CHECKING:
    # The status model lives in the module that starts and stops launches; only its type is
    # needed here, so drawing a status table loads no executor or HTTP session.
    from sparkrig.launch.lifecycle import LaunchStatus
    from sparkrig.launch.sync import SyncPlan


def plan_view(plan: LaunchPlan) -> RenderableType:
    parts: list[RenderableType] = [
        Text(
            f"plan: {plan.cluster} — {plan.engine} ({plan.backend}), head {plan.head}, "
            f"API {plan.api_url}/v1, model {plan.model_name}"
        )
    ]
    for step, process in enumerate(plan.processes, 1):
        access = next((a for a in plan.access if a.node == process.node), None)
        via = "no executor"
        if access is not None:
            via = " ".join(filter(None, (access.executor.kind, access.executor.target)))
        parts.append(
            Text(
                f"{step}. {process.node} ({process.role}, via {via}) {process.name}, ready when "
                f"{process.ready_when}, log {plan.log_path(process) if access else '—'}",
                style="bold",
            )
        )
        lines = process.shell_lines()  # one option a line: a 1,400-character line reads badly
        parts.append(Text("\n".join(["   " + lines[0], *("     " + line for line in lines[1:])])))
    parts += [Text(f"warning: {w}", style="yellow") for w in plan.warnings]
    return Group(*parts)


def status_table(status: LaunchStatus) -> RenderableType:
    table = Table(title=f"{status.cluster} — {status.api_url}/v1")
    contained = any(row.container is not None for row in status.rows)
    headers = ["node", "role", "process", "phase", "pid", "uptime"]
    for header in [*headers, *(["container"] if contained else []), "last log line"]:
        table.add_column(header, overflow="fold")
    for row in status.rows:
        style = "red" if row.phase in {"exited", "stalled", "not started", "unreachable"} else None
        cells: list[RenderableType] = [
            row.node,
            row.role,
            row.name,
            Text(str(row.phase), style=style or ""),
            "—" if row.pid is None else str(row.pid),
            "—" if row.uptime_s is None else f"{row.uptime_s:.0f}s",
        ]
        if contained:
            cells.append(row.container or "—")
        table.add_row(*cells, row.last_line[-100:])
    verdict = Text(status.summary, style="green" if status.ready else "red")
    parts: list[RenderableType] = [table, verdict]
    parts += signature_lines(status.signatures, status.kernel_notes)
    quiet_style = {"suspect": "red", "unknown": "yellow"}
    parts += [Text(q.message, style=quiet_style.get(q.verdict, "")) for q in status.quiet]
    if (boot := boot_table(status.boot)) is not None:
        parts.append(boot)
    if status.kv_pool_tokens is not None:
        parts.append(Text(f"KV pool this boot: {status.kv_pool_tokens:,} tokens"))
    return Group(*parts)


def sync_table(sync: SyncPlan) -> RenderableType:
    """One row per node against the source: the image's state and the model files to copy."""
    table = Table(title=f"{sync.cluster}: sync from {sync.source}")
    for header in ("node", "image", "model", "detail"):
        table.add_column(header, overflow="fold")
    for node in sync.nodes:
        if not node.model_needed:
            model = "not needed"
        elif node.model_files:
            model = f"{len(node.model_files)} file(s), {node.model_bytes / 1e9:.2f} GB to copy"
        else:
            model = "same"
        style = "" if node.in_step else "yellow"
        table.add_row(
            node.node, Text(node.image, style=style), Text(model, style=style), node.image_detail
        )
    return table
