"""Tasks of the tasks extension on a deployment of several workers sharing
Redis: made on one worker, polled, cancelled and read from any other."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from support.scaleout import (
    Workers,
    deployment,
    modern_call,
    modern_request,
    on_both_workers,
    result_of,
)

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def cluster() -> Iterator[Workers]:
    with deployment() as (_, workers):
        yield workers


def task_request(cluster: Workers, request_id: int, method: str, task_id: str) -> Any:
    data = result_of(
        modern_request(
            cluster.url, request_id, method, {"taskId": task_id}, task_id, extensions=True
        )
    )
    assert "result" in data, data
    return data["result"]


def test_a_task_made_on_one_worker_is_polled_and_cancelled_on_others(cluster: Workers) -> None:
    created = modern_call(cluster.url, 1, "wait_job", {"seconds": 4}, extensions=True)
    assert created["resultType"] == "task" and created["status"] == "working"
    task_id = created["taskId"]
    polls = [task_request(cluster, 10 + n, "tasks/get", task_id) for n in range(12)]
    runners = {poll["statusMessage"] for poll in polls}
    assert len(runners) == 1 and all(poll["status"] == "working" for poll in polls)
    runner = runners.pop()  # "running on <pid>": the worker that runs it
    served = on_both_workers(
        lambda n: str(modern_call(cluster.url, 30 + n, "pid", {})["content"][0]["text"])
    )
    assert runner.split()[-1] in served  # the polls above were answered by both workers alike
    assert task_request(cluster, 50, "tasks/cancel", task_id)["resultType"] == "complete"
    for n in range(8):
        assert task_request(cluster, 60 + n, "tasks/get", task_id)["status"] == "cancelled"
    time.sleep(4.5)  # past when the work would have finished: it was stopped, the outcome stays
    for n in range(6):
        assert task_request(cluster, 70 + n, "tasks/get", task_id)["status"] == "cancelled"


def test_a_finished_task_has_its_result_on_every_worker(cluster: Workers) -> None:
    created = modern_call(cluster.url, 1, "wait_job", {"seconds": 0.3}, extensions=True)
    time.sleep(1.0)
    for n in range(8):
        got = task_request(cluster, 2 + n, "tasks/get", created["taskId"])
        assert got["status"] == "completed"
        assert got["result"]["content"][0]["text"].startswith("finished on ")


def test_an_unknown_task_is_unknown_on_every_worker(cluster: Workers) -> None:
    for n in range(4):
        answer = modern_request(
            cluster.url, n, "tasks/get", {"taskId": "nope"}, "nope", extensions=True
        )
        data = answer.json()
        assert (
            answer.status_code == 400
            and data["error"]["code"] == -32602
            and "Unknown task" in data["error"]["message"]
        )
