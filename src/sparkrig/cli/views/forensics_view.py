"""Terminal views of what the ranks' logs say: the signatures found, the kernel logs that could
not be read, and each rank's boot phases."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sparkrig.launch.boot_phases import BootPhase
from sparkrig.launch.log_signatures import SignatureHit


def signature_lines(hits: list[SignatureHit], kernel_notes: list[str]) -> list[RenderableType]:
    parts: list[RenderableType] = []
    for hit in hits:
        parts.append(Text(f"signature [{hit.signature}] in {hit.where} ×{hit.count}", style="red"))
        parts.append(Text(f"   line {hit.line_number}: {hit.line[:200]}"))
        parts.append(Text(f"   means: {hit.meaning}"))
        parts.append(Text(f"   fix: {hit.fix} ({', '.join(hit.sources)})"))
    parts += [Text(note, style="yellow") for note in kernel_notes]
    return parts


def boot_table(boot: dict[str, list[BootPhase]]) -> Table | None:
    if not boot:
        return None
    table = Table(title="boot phases (from each rank's own log)")
    for header in ("rank", "phase", "took", "done at"):
        table.add_column(header)
    for key, phases in boot.items():
        for phase in phases:
            table.add_row(key, phase.name, f"{phase.took_s:.1f}s", f"{phase.at_s:.1f}s")
    return table


def forensics_view(
    hits: list[SignatureHit],
    kernel_notes: list[str],
    boot: dict[str, list[BootPhase]],
    read_errors: list[str],
) -> RenderableType:
    parts = signature_lines(hits, kernel_notes)
    parts += [Text(error, style="red") for error in read_errors]
    if (table := boot_table(boot)) is not None:
        parts.append(table)
    if not hits:
        parts.append(Text("no known log signature found", style="green"))
    return Group(*parts)
