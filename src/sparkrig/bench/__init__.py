"""Workloads that measure an endpoint; today the demo's smoke workload."""
