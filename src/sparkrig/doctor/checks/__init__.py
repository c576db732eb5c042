"""Every doctor check; importing this package registers them (`sparkrig.doctor.registry`)."""

from sparkrig.doctor.checks import (
    cluster,
    container,
    engine_version,
    gpu,
    host,
    model_vocab,
    network,
    prerequisites,
    ray_placement,
    rdma,
    serving_user,
    storage,
)

__all__ = [
    "cluster",
    "container",
    "engine_version",
    "gpu",
    "host",
    "model_vocab",
    "network",
    "prerequisites",
    "ray_placement",
    "rdma",
    "serving_user",
    "storage",
]
