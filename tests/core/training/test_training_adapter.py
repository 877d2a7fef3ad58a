"""A LoRA run's adapter saved alone (a few MB) and merged back into a fresh base model at load time."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from _tiny_lm import build_tiny_lm
from test_training_trainer import LORA, PAIRS, continuation_logprob, examples

from retrievekit.core.errors import IndexFormatError, ModelMismatchError
from retrievekit.core.training import TrainConfig, load_trained_model, train_causal_lm
from retrievekit.core.training.adapter import ADAPTER_FILE, is_adapter_folder, merge_adapter

pytest.importorskip("peft")


def test_the_adapter_alone_loads_into_a_fresh_base_as_the_merged_model(tmp_path: Path) -> None:
    model, tok = build_tiny_lm()
    train_causal_lm(model, tok, examples(), LORA, tmp_path, kind="judge", base_model="tiny", progress=False)
    adapter = tmp_path / "adapter"
    assert is_adapter_folder(adapter) and not is_adapter_folder(tmp_path / "model")
    assert {p.name for p in adapter.iterdir()} == {ADAPTER_FILE, "retrievekit_model.json"}
    merged, mtok, manifest = load_trained_model(tmp_path / "model", kind="judge", device="cpu")
    fresh = build_tiny_lm()  # the same seeded base the run started from
    back, btok, back_manifest = load_trained_model(adapter, kind="judge", device="cpu", base=fresh)
    assert back_manifest.train == manifest.train
    for q, t in PAIRS:
        assert continuation_logprob(back, btok, q, t) == pytest.approx(
            continuation_logprob(merged, mtok, q, t), abs=1e-4
        )
    untouched = build_tiny_lm()[0]
    assert continuation_logprob(back, btok, *PAIRS[0]) > continuation_logprob(untouched, btok, *PAIRS[0]) + 1.0


def test_an_adapter_on_another_base_or_corrupt_is_refused(tmp_path: Path) -> None:
    model, tok = build_tiny_lm()
    cfg = TrainConfig(**{**LORA.to_dict(), "max_steps": 2})
    train_causal_lm(model, tok, examples(), cfg, tmp_path, kind="judge", base_model="tiny", progress=False)
    wider = build_tiny_lm(hidden_size=96)
    with pytest.raises(ModelMismatchError, match="trained on another base model"):
        load_trained_model(tmp_path / "adapter", kind="judge", device="cpu", base=wider)
    (tmp_path / "adapter" / ADAPTER_FILE).write_bytes(b"not safetensors")
    with pytest.raises(IndexFormatError):
        load_trained_model(tmp_path / "adapter", kind="judge", device="cpu", base=build_tiny_lm())
    with pytest.raises(IndexFormatError, match="could not read the adapter"):
        merge_adapter(torch.nn.Linear(2, 2), tmp_path / "adapter")
