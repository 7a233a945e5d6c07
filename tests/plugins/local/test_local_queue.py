"""The local engine's scheduling, without a model: threads for the load the machine has, and a
slot that frees taking the waiting request that shares its cached prefix (so a judge with two
templates does not send a cold prompt at every switch), none waiting for ever."""

from __future__ import annotations

import concurrent.futures

import pytest

from evalyard_local.engine import LoadSettings, PrefixQueue, shared_start, threads_for_load


@pytest.mark.parametrize("cores, load, threads", [(2, 0.1, 2), (2, 0.6, 1), (2, 5.0, 1), (8, 2.2, 6), (4, 0.0, 4)])
def test_threads_leave_the_busy_cores_to_others(cores, load, threads):
    assert threads_for_load(cores, load) == threads


def test_threads_are_chosen_at_load_not_in_the_settings(monkeypatch):
    """Settings stay equal from call to call (a change would reload the model); a named number wins."""
    monkeypatch.delenv("EVALYARD_LOCAL_THREADS", raising=False)
    assert LoadSettings.resolve().n_threads is None and LoadSettings.resolve() == LoadSettings.resolve()
    assert LoadSettings.resolve(n_threads=3).n_threads == 3


def test_shared_start():
    assert shared_start("judge: claims of A", "judge: claims of B") == len("judge: claims of ")
    assert shared_start("", "abc") == 0 and shared_start("abc", "abc") == 3 and shared_start("abd", "abc") == 2


def request(template, case):
    return {"messages": [{"role": "system", "content": f"You are the {template} judge. " * 20},
                         {"role": "user", "content": f"case {case}"}]}


def drain(queue, last=None, n=None):
    """The order a single slot serves the queue in, starting from the prompt ``last``."""
    order = []
    for _ in range(n if n is not None else len(queue._items)):
        taken, _ = queue.take(last)
        order.append(taken["messages"][0]["content"].split()[3] + " " + taken["messages"][1]["content"])
        last = taken["messages"]
    return order


def test_a_free_slot_takes_the_request_that_reuses_its_prefix():
    queue = PrefixQueue()
    for case in range(4):  # a judge alternating its two templates, case by case
        for template in ("claim", "check"):
            queue.put(request(template, case), concurrent.futures.Future())
    order = drain(queue, last=request("check", 9)["messages"])
    assert order == ["check case 0", "check case 1", "check case 2", "check case 3",
                     "claim case 0", "claim case 1", "claim case 2", "claim case 3"]


def test_no_request_waits_for_ever():
    queue = PrefixQueue()
    queue.put(request("other", 0), concurrent.futures.Future())
    for case in range(20):
        queue.put(request("claim", case), concurrent.futures.Future())
    order = drain(queue, last=request("claim", 99)["messages"])
    assert order.index("other case 0") == PrefixQueue.MAX_SKIPS  # passed over at most MAX_SKIPS times
    assert sorted(order) == sorted(["other case 0"] + [f"claim case {c}" for c in range(20)])
