"""Outlines / transformers constraint processors: vectorised masks, beam search, Outlines Generator."""

from __future__ import annotations

import doctest

import pytest
import torch
from _tiny_lm import SENTENCES, TITLES, build_tiny_lm
from transformers import LogitsProcessorList

import retrievekit.outlines.processors as proc_module
from retrievekit.core.index.suffix_array import TokenSuffixArray
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.outlines import (
    AllowedTokensLogitsProcessor,
    SuffixArrayLogitsProcessor,
    TrieLogitsProcessor,
    allowed_mask,
    prefix_allowed_tokens_fn,
)


@pytest.fixture(scope="module")
def tiny() -> tuple:
    return build_tiny_lm()


def encode(tok, text: str) -> list[int]:  # noqa: ANN001
    return tok.encode(text, add_special_tokens=False)


def test_mask_matches_allowed_sets() -> None:
    trie = TokenTrie([[1, 2], [1, 3], [4]], eos_token_id=0)
    prefixes = [[], [1], [1, 2], [7]]
    mask = allowed_mask(trie, prefixes, 6, 0)
    for row, p in zip(mask, prefixes, strict=True):
        expected = trie.allowed(p) or [0]
        assert row.nonzero().flatten().tolist() == expected


def test_processor_after_eos_only_eos() -> None:
    p = AllowedTokensLogitsProcessor(TokenTrie([[3, 4]], eos_token_id=0), prompt_length=1)
    out = p(torch.tensor([[9, 3, 4, 0], [9, 3, 0, 0]]), torch.zeros(2, 6))
    assert torch.isfinite(out[0]).nonzero().flatten().tolist() == [0]
    assert torch.isfinite(out[1]).nonzero().flatten().tolist() == [0]


@pytest.mark.parametrize("hook", ["processor", "prefix_fn"])
def test_beam_search_titles_are_real(tiny: tuple, hook: str) -> None:
    model, tok = tiny
    titles = [encode(tok, " " + t) for t in TITLES]
    trie = TokenTrie(titles, eos_token_id=tok.eos_token_id)
    prompt = torch.tensor([encode(tok, "Title:")])
    kw: dict = {"num_beams": 4, "num_return_sequences": 4, "max_new_tokens": 12, "do_sample": False}
    if hook == "processor":
        kw["logits_processor"] = LogitsProcessorList([TrieLogitsProcessor(trie)])
    else:
        kw["prefix_allowed_tokens_fn"] = prefix_allowed_tokens_fn(trie, prompt.shape[1])
    out = model.generate(prompt, attention_mask=torch.ones_like(prompt), pad_token_id=tok.pad_token_id, **kw)
    for seq in out[:, prompt.shape[1] :].tolist():
        gen = seq[: seq.index(tok.eos_token_id)] if tok.eos_token_id in seq else seq
        assert trie.is_prefix(gen)
        if tok.eos_token_id in seq:
            assert gen in trie


def test_suffix_array_processor_generates_substrings(tiny: tuple) -> None:
    model, tok = tiny
    docs = [encode(tok, " " + s) for s in SENTENCES[:3]]
    sa = TokenSuffixArray(docs)
    proc = SuffixArrayLogitsProcessor(sa, eos_token_id=tok.eos_token_id)
    prompt = torch.tensor([encode(tok, "Answer:")])
    out = model.generate(
        prompt,
        attention_mask=torch.ones_like(prompt),
        num_beams=3,
        num_return_sequences=3,
        max_new_tokens=6,
        do_sample=False,
        pad_token_id=tok.pad_token_id,
        logits_processor=LogitsProcessorList([proc]),
    )
    for seq in out[:, prompt.shape[1] :].tolist():
        gen = seq[: seq.index(tok.eos_token_id)] if tok.eos_token_id in seq else seq
        assert sa.count(gen) >= 1


def test_outlines_generator_with_trie_processor(tiny: tuple) -> None:
    outlines = pytest.importorskip("outlines")
    model, tok = tiny
    trie = TokenTrie([encode(tok, " " + t) for t in TITLES], eos_token_id=tok.eos_token_id)
    gen = outlines.Generator(outlines.from_transformers(model, tok), processor=TrieLogitsProcessor(trie))
    text = gen("Title:", max_new_tokens=12)
    assert text.strip() in TITLES


def test_doctests() -> None:
    assert doctest.testmod(proc_module, optionflags=doctest.ELLIPSIS).failed == 0
