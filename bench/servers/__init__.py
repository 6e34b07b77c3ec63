"""Echo servers for the round-trip benchmarks; run as scripts (``python bench/servers/ours_stdio.py``)."""
