"""One judge resolver: each typed ``JudgeSpec`` and each legacy ``--judge`` string (option ``judge_dir``) is read once
by ``parse_judge`` into the same value and built by ``build_judge``; an unknown one is a typed ``InvalidInputError``.

The built-in judges' loaders are scripted where which loader gets which argument is the point (a scripted judge
package in ``sys.modules``, as tests/core/llm/test_judge_hooks.py does); the cosine judge is the real one."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from retrievekit.core.errors import InvalidInputError, UnknownNameError
from retrievekit.core.fakes import OnesEmbedder, WordJudge
from retrievekit.core.llm.judge_choice import (
    JUDGE_KINDS,
    JudgeSpec,
    build_judge,
    parse_judge,
    register_judge,
    resolve_judge,
)
from retrievekit.core.llm.judge_hooks import judge_from_options
from retrievekit.core.registry import MethodContext


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("served", JudgeSpec.served()),
        ("cosine", JudgeSpec.cosine()),
        ("zero-shot", JudgeSpec.zero_shot()),
        ("oracle", JudgeSpec.oracle()),
        ("oracle:0.3", JudgeSpec.oracle(0.3)),
        ("oracle:0.3:5", JudgeSpec.oracle(0.3, seed=5)),
        ("runs/judge-scifact", JudgeSpec.trained("runs/judge-scifact")),
        (" served ", JudgeSpec.served()),
    ],
)
def test_each_legacy_string_is_read_into_its_typed_value(text: str, spec: JudgeSpec) -> None:
    assert parse_judge(text) == spec
    assert parse_judge(spec) is spec  # a typed value as it is
    assert parse_judge(spec.label) == spec  # and back: the value as --judge writes it


def test_a_folder_wins_over_a_kind_of_the_same_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "served").mkdir()
    assert parse_judge("served") == JudgeSpec.trained("served")
    assert parse_judge(tmp_path / "served") == JudgeSpec.trained(str(tmp_path / "served"))


@pytest.mark.parametrize("empty", [None, "", "   "])
def test_no_judge(empty: Any) -> None:
    assert parse_judge(empty) is None and build_judge(empty, MethodContext(corpus=[])) is None


@pytest.fixture
def scripted_loaders(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """The judge package's loaders, scripted: each records what it was given and returns a judge."""
    calls: list[tuple[str, Any]] = []
    pkg = types.ModuleType("retrievekit.core.judge")

    def load_judge(path: str) -> WordJudge:
        calls.append(("trained", path))
        return WordJudge("trained")

    class Judge:
        @staticmethod
        def zero_shot(llm: Any) -> WordJudge:
            calls.append(("zero-shot", llm))
            return WordJudge("zero")

    served = types.ModuleType("retrievekit.core.judge.served")

    class ServedJudge:
        @staticmethod
        def from_spec(llm: Any) -> WordJudge:
            calls.append(("served", llm))
            return WordJudge("served")

    pkg.load_judge, pkg.Judge, served.ServedJudge = load_judge, Judge, ServedJudge
    monkeypatch.setitem(sys.modules, "retrievekit.core.judge", pkg)
    monkeypatch.setitem(sys.modules, "retrievekit.core.judge.served", served)
    return calls


@pytest.mark.parametrize(
    ("value", "call"),
    [
        (JudgeSpec.served(), ("served", "openai:m@http://127.0.0.1:1/v1")),
        ("served", ("served", "openai:m@http://127.0.0.1:1/v1")),
        (JudgeSpec.zero_shot(), ("zero-shot", "openai:m@http://127.0.0.1:1/v1")),
        ("zero-shot", ("zero-shot", "openai:m@http://127.0.0.1:1/v1")),
        (JudgeSpec.trained("runs/j"), ("trained", "runs/j")),
        ("runs/j", ("trained", "runs/j")),
    ],
)
def test_each_value_builds_its_judge_from_the_methods_context(
    scripted_loaders: list[tuple[str, Any]], value: Any, call: tuple[str, Any]
) -> None:
    ctx = MethodContext(corpus=[], llm="openai:m@http://127.0.0.1:1/v1", options={"judge_dir": value, "calls": 2})
    judge, options = judge_from_options(ctx)
    assert scripted_loaders == [call] and judge.word == {"served": "served", "zero-shot": "zero"}.get(call[0], call[0])
    assert options == {"calls": 2}


def test_the_cosine_judge_is_built_over_the_methods_embedder() -> None:
    from retrievekit.core.judge.cosine import CosineJudge

    embedder = OnesEmbedder()
    for value in (JudgeSpec.cosine(), "cosine"):
        judge = build_judge(value, MethodContext(corpus=[], embedder=embedder))
        assert isinstance(judge, CosineJudge)


@pytest.mark.parametrize("value", [JudgeSpec.oracle(0.2), "oracle:0.2"])
def test_the_oracle_is_the_harness_alone(value: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"--judge oracle:0.2 reads the dataset's gold labels"):
        build_judge(value, MethodContext(corpus=[]))


def test_a_registered_judge_is_a_kind_by_name() -> None:
    register_judge("fruit", lambda ctx: WordJudge(str(ctx.options.get("word", "banana"))))
    try:
        assert parse_judge("fruit") == JudgeSpec("fruit")
        judge, _ = judge_from_options(MethodContext(corpus=[], options={"judge_dir": "fruit"}))
        assert judge.score_relevance("q", ["Banana bread", "Rye"]) == [0.9, 0.2]
        assert isinstance(resolve_judge(JudgeSpec("fruit")), WordJudge)
    finally:
        JUDGE_KINDS.unregister("fruit")
    with pytest.raises(InvalidInputError, match="built-in judge"):
        register_judge("served", lambda ctx: WordJudge("x"))


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (
            lambda: JudgeSpec("servd"),
            UnknownNameError,
            r"unknown judge 'servd'; known: cosine, served, trained, zero-shot",
        ),
        (lambda: JudgeSpec.oracle(1.5), InvalidInputError, "noise in \\[0, 1\\]"),
        (lambda: JudgeSpec("trained"), InvalidInputError, "names its folder"),
        (lambda: JudgeSpec("served", path="x"), InvalidInputError, "names its folder"),
        (lambda: parse_judge(42), InvalidInputError, "got int 42"),
        (lambda: parse_judge("oracle:2"), InvalidInputError, "needs a noise S in \\[0, 1\\]"),
        (lambda: resolve_judge(object()), InvalidInputError, "judge must implement score_relevance"),
        (lambda: build_judge("servd", MethodContext(corpus=[])), UnknownNameError, "no such trained judge folder"),
    ],
)
def test_an_unknown_or_bad_value_is_a_typed_error(value: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as e:
        value()
    assert isinstance(e.value, InvalidInputError)
