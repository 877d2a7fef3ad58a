"""Thread settings of retrievekit's own model calls: order of precedence, validation, restore after use."""

from __future__ import annotations

import threading

import pytest
import torch
from _thread_watch import on_threads

from retrievekit.core import threads
from retrievekit.core.errors import InvalidInputError


@pytest.fixture(autouse=True)
def _reset():
    threads.set_num_threads(None)
    yield
    threads.set_num_threads(None)


def test_precedence_code_then_environment_then_default(monkeypatch):
    monkeypatch.delenv(threads.ENV_VAR, raising=False)
    assert threads.num_threads() == threads.default_num_threads() >= 1
    monkeypatch.setenv(threads.ENV_VAR, "3")
    assert threads.num_threads() == 3
    threads.set_num_threads(2)
    assert threads.num_threads() == 2
    threads.set_num_threads(None)
    assert threads.num_threads() == 3


def test_default_is_half_the_usable_cpus(monkeypatch):
    monkeypatch.setattr(threads, "available_cpus", lambda: 2)
    assert threads.default_num_threads() == 1
    monkeypatch.setattr(threads, "available_cpus", lambda: 16)
    assert threads.default_num_threads() == 8
    monkeypatch.setattr(threads, "available_cpus", lambda: 1)
    assert threads.default_num_threads() == 1


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5"])
def test_bad_values_are_typed_errors(monkeypatch, bad):
    monkeypatch.setenv(threads.ENV_VAR, bad)
    with pytest.raises(InvalidInputError, match=threads.ENV_VAR):
        threads.num_threads()
    with pytest.raises(InvalidInputError, match="positive integer"):
        threads.set_num_threads(bad)  # type: ignore[arg-type]


def test_model_calls_use_the_setting_and_restore_the_callers():
    before = torch.get_num_threads()
    caller = 2 if before != 2 else 3
    torch.set_num_threads(caller)
    try:
        threads.set_num_threads(1)
        with threads.model_threads() as n:
            assert n == 1 and torch.get_num_threads() == 1
            with threads.model_threads():  # nested: unchanged, and the outer exit restores
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == caller
        with pytest.raises(RuntimeError), threads.model_threads():
            raise RuntimeError("a failing model call still restores the caller's setting")
        assert torch.get_num_threads() == caller
    finally:
        torch.set_num_threads(before)


def test_concurrent_callers_restore_once():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    threads.set_num_threads(1)
    inside = threading.Barrier(4)
    seen: list[int] = []

    def call() -> None:
        with threads.model_threads():
            inside.wait()
            seen.append(torch.get_num_threads())
            inside.wait()

    try:
        on_threads(call, 4)
        assert seen == [1, 1, 1, 1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_local_lm_calls_run_with_the_setting(monkeypatch):
    """A real (tiny) model call goes through the setting: torch reports it from inside the forward pass."""
    from _tiny_lm import build_tiny_lm

    from retrievekit.core.llm.local import LocalLM

    model, tok = build_tiny_lm()
    lm = LocalLM(model, tok, use_outlines=False)
    seen: list[int] = []
    model.register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        threads.set_num_threads(1)
        lm.next_token_logprobs("The quick brown fox")
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_deadline_workers_are_reused_a_hung_call_never_delays_the_next_and_every_call_has_its_context():
    """The watchdog's workers are reused (sequential calls start at most one thread), a call never waits for a
    worker (one still stuck past its deadline does not delay the next), and each call sees its caller's context."""
    import contextvars
    import threading

    from retrievekit.core.deadline import run_with_deadline

    run_with_deadline(lambda: None, 5.0)  # a worker, idle from now on
    started = []
    real_start = threading.Thread.start

    def counted(self):
        started.append(self.name)
        real_start(self)

    threading.Thread.start = counted
    try:
        assert [run_with_deadline(lambda i=i: i * i, 5.0) for i in range(50)] == [i * i for i in range(50)]
    finally:
        threading.Thread.start = real_start
    assert len(started) <= 1, started

    release = threading.Event()
    with pytest.raises(TimeoutError, match="no reply within 0.05 s"):
        run_with_deadline(release.wait, 0.05)  # stuck until released
    assert run_with_deadline(lambda: "next", 5.0) == "next"  # queued behind the stuck worker, it would time out
    release.set()

    var = contextvars.ContextVar("who", default="nobody")
    var.set("caller")
    assert run_with_deadline(var.get, 5.0) == "caller"
    with pytest.raises(KeyError):
        run_with_deadline(lambda: {}["missing"], 5.0)


def test_an_idle_deadline_worker_keeps_nothing_of_its_last_call_alive():
    """A reused worker must not hold its last call's objects (a client and its open connections) while it waits."""
    import gc
    import weakref

    from retrievekit.core.deadline import run_with_deadline

    class Client:
        def ask(self):
            return "ok"

    client = Client()
    gone = weakref.ref(client)
    assert run_with_deadline(client.ask, 5.0) == "ok"
    del client
    gc.collect()
    assert gone() is None, "an idle deadline worker kept its last call's client alive"
