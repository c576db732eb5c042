"""The switchless fabric: cable graph, rank order, subnets, relay routes, NCCL environment and
graph XML (pure planner), renderers, and the host actions (apply, restore, discover) that run
through an injected executor. Kept import-light: `python -m sparkrig.fabric.probe` runs inside
network namespaces and on nodes."""
