"""The cluster file: nodes, ports, cables, fabric settings; TOML loading with line numbers."""

from sparkrig.config.cluster import (
    Cable,
    Cluster,
    FabricSettings,
    Node,
    Port,
    PortFunction,
    PortRef,
    Switch,
)
from sparkrig.config.loading import load_cluster, parse_cluster

__all__ = [
    "Cable",
    "Cluster",
    "FabricSettings",
    "Node",
    "Port",
    "PortFunction",
    "PortRef",
    "Switch",
    "load_cluster",
    "parse_cluster",
]
