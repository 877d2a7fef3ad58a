"""ARM's keyword alignment is cached per (model, question, vocabulary, settings, prompts) and decoded once."""

from __future__ import annotations

import pytest
from _arm import QUESTION, corpus
from _tiny_lm import build_tiny_lm

from retrievekit.core.arm import Arm, ArmConfig
from retrievekit.core.arm.keyword_cache import KeywordCache
from retrievekit.core.errors import LLMOutputError, StoreUnavailableError
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.llm import LocalLM
from retrievekit.core.trace import Trace

CFG = {"max_keywords": 2, "keyword_beams": 2, "words_per_keyword": 2, "verify": False, "ilp_k": 4}


@pytest.fixture(scope="module")
def parts(minilm):
    objs = corpus()
    model, tok = build_tiny_lm()
    lm = LocalLM(model, tok, name="tiny", use_outlines=False)
    return objs, DenseIndex.build(objs, embedder=minilm), BM25Index.build(objs), lm


def _search(parts, cache, **options):
    objs, dense, bm25, lm = parts
    arm = Arm(objs, lm, ArmConfig.from_options({**CFG, **options}), dense=dense, bm25=bm25, keyword_cache=cache)
    trace = Trace()
    hits = arm.search(QUESTION, k=3, trace=trace)
    return [h.id for h in hits], trace


def test_second_run_reuses_the_alignment_and_returns_the_same_set(parts, tmp_path):
    first_ids, first = _search(parts, KeywordCache(tmp_path, model="tiny"))
    assert first.llm_calls >= 2 and "arm.keyword_cache_hits" not in first.counters
    again_ids, again = _search(parts, KeywordCache(tmp_path, model="tiny"))  # a new process would read the file
    assert again.llm_calls == 0 and again.counters["arm.keyword_cache_hits"] == 1
    assert again_ids == first_ids


def test_another_model_or_setting_decodes_again(parts, tmp_path):
    _search(parts, KeywordCache(tmp_path, model="tiny"))
    _, other_model = _search(parts, KeywordCache(tmp_path, model="another-model"))
    assert other_model.llm_calls >= 2
    _, other_setting = _search(parts, KeywordCache(tmp_path, model="tiny"), max_keywords=1)
    assert other_setting.llm_calls >= 2


def test_a_line_cut_short_is_ignored(parts, tmp_path):
    _search(parts, KeywordCache(tmp_path, model="tiny"))
    (own,) = tmp_path.glob("keywords.*.jsonl")
    own.write_text(own.read_text()[:-20])  # the last entry cut mid-line, as by a killed process
    cache = KeywordCache(tmp_path, model="tiny")
    assert len(cache) == 0
    _, trace = _search(parts, cache)
    assert trace.llm_calls >= 2


class _FailingChat:
    """A chat LLM whose JSON replies always fail in the given way (the failure's kind is the point)."""

    def __init__(self, error: Exception) -> None:
        self.error, self.calls = error, 0

    def complete_json(self, prompt, schema, **kwargs):
        self.calls += 1
        raise self.error


def _search_with(parts, llm, cache):
    objs, dense, bm25, _ = parts
    arm = Arm(objs, llm, ArmConfig.from_options(CFG), dense=dense, bm25=bm25, keyword_cache=cache)
    trace = Trace()
    ids = [h.id for h in arm.search(QUESTION, k=3, trace=trace)]
    return ids, trace


def test_a_fallback_from_the_models_reply_is_kept_one_from_an_unreachable_model_is_not(parts, tmp_path):
    bad_reply = _FailingChat(LLMOutputError("LLM reply did not match the schema after 3 attempt(s)"))
    first_ids, first = _search_with(parts, bad_reply, KeywordCache(tmp_path / "reply", model="chat"))
    again_ids, again = _search_with(parts, bad_reply, KeywordCache(tmp_path / "reply", model="chat"))
    assert bad_reply.calls == 1 and again.counters["arm.keyword_cache_hits"] == 1 and again_ids == first_ids
    notes = [e.message for e in again.events if e.kind == "fallback"]
    assert any("did not match the schema" in m and "(cached)" in m for m in notes)  # still said, and from where

    down = _FailingChat(StoreUnavailableError("the model server did not answer"))
    _search_with(parts, down, KeywordCache(tmp_path / "down", model="chat"))
    _, retried = _search_with(parts, down, KeywordCache(tmp_path / "down", model="chat"))
    assert down.calls == 2 and "arm.keyword_cache_hits" not in retried.counters
    assert len(KeywordCache(tmp_path / "down", model="chat")) == 0
