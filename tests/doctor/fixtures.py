"""Loading doctor's fixtures: `tests/fixtures/doctor/NAME/` holds one folder per node (raw tool
outputs, see tests/fixtures/doctor/README.md) and, for plan checks, the cluster file."""

from __future__ import annotations

from pathlib import Path

from sparkrig.config import load_cluster
from sparkrig.doctor.capture_files import load_captures
from sparkrig.doctor.model import DoctorReport
from sparkrig.doctor.session import check_captures

FIXTURES = Path(__file__).parent.parent / "fixtures" / "doctor"


def report_of(name: str, only: list[str] | None = None) -> DoctorReport:
    folder = FIXTURES / name
    toml = folder / "cluster.toml"
    cluster = load_cluster(toml) if toml.exists() else None
    report, _ = check_captures(load_captures(folder), cluster, only=only)
    return report
