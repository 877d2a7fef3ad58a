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
