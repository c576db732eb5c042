"""Every doctor check; importing this package registers them (`sparkrig.doctor.registry`)."""

from sparkrig.doctor.checks import (
    cluster,
    engine_version,
    gpu,
    host,
    network,
    rdma,
    serving_user,
    storage,
)

__all__ = [
    "cluster",
    "engine_version",
    "gpu",
    "host",
    "network",
    "rdma",
    "serving_user",
    "storage",
]
