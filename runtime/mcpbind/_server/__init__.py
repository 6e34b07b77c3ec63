"""The low-level server: routes, answers and the per-request wire around handlers."""
