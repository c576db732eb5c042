"""Terminal view of a doctor report: one table per node, errors first, then the skipped checks
(one line per reason) and a summary line."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sparkrig.doctor.model import SEVERITY_ORDER, DoctorReport

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def doctor_view(report: DoctorReport) -> Group:
    parts: list[RenderableType] = []
    # every place a finding names: the nodes, the cluster, and anything else (`live`: the
    # running server of --server), so no counted finding goes unprinted
    nodes = [*report.nodes, "cluster"]
    nodes += sorted({f.node for f in report.findings} - set(nodes))
    for node in nodes:
        findings = sorted(
            (f for f in report.findings if f.node == node),
            key=lambda f: (SEVERITY_ORDER[f.severity], f.check),
        )
        if not findings:
            continue
        table = Table(title=node, title_justify="left", show_lines=True, expand=True)
        table.add_column("severity", no_wrap=True)
        table.add_column("check", no_wrap=True)
        table.add_column("seen")
        table.add_column("fix (printed, not run)")
        for finding in findings:
            table.add_row(
                Text(finding.severity, style=_STYLE[finding.severity]),
                finding.check,
                Text(f"{finding.seen}\n") + Text(f"{finding.why} ({finding.source})", style="dim"),
                Text(finding.fix),
            )
        parts.append(table)
    for skip in report.skipped:
        parts.append(
            Text(f"skipped on {skip.node}: {', '.join(skip.checks)} ({skip.reason})", style="dim")
        )
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in SEVERITY_ORDER}
    clean = [n for n in report.nodes if not any(f.node == n for f in report.findings)]
    summary = (
        f"{len(report.nodes)} node(s), {report.checks_run} checks run: {counts['error']} error(s), "
        f"{counts['warning']} warning(s), {counts['info']} note(s), "
        f"{sum(len(s.checks) for s in report.skipped)} skipped"
        + (f"; nothing found on {', '.join(clean)}" if clean else "")
    )
    parts.append(Text(summary, style="bold red" if counts["error"] else "bold"))
    return Group(*parts)
