"""Neighbour-only collectives for a switchless ring: pure schedules (`schedule`), their torch
execution over point-to-point sends (`execute`, needs `sparkrig[collectives]`), and the fabric
test that runs them on every node (`worker`, `fabric_test`)."""
