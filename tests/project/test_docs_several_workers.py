"""The guides say the same of several workers: the deployment guide's section on
them names the shared store (``RedisStore``, the scaling guide) with which any
worker serves any request, sessions and tasks included, as the scaling guide
says. It said sessions need sticky routing or the stateless mode, and tasks a
single worker, never mentioning the store."""

from __future__ import annotations

from pathlib import Path

GUIDES = Path(__file__).resolve().parents[2] / "docs" / "guides"


def section(document: Path, title: str) -> str:
    text = document.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_the_deployment_guide_names_the_shared_store_for_several_workers() -> None:
    workers = section(GUIDES / "deployment.md", "Several workers")
    assert "RedisStore" in workers and "(scaling.md)" in workers, workers
    # What needs sticky routing or one worker is said of workers without a store only.
    for paragraph in workers.split("\n\n"):
        if "sticky sessions" in paragraph or "single worker" in paragraph:
            assert paragraph.startswith("Without a store"), paragraph


def test_the_scaling_guide_says_sessions_need_no_sticky_routing_with_the_store() -> None:
    hosts = section(GUIDES / "scaling.md", "From one process to many hosts")
    assert "**no sticky sessions are\n   needed**" in hosts or "no sticky sessions" in hosts
