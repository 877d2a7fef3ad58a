"""The shared trainer on a tiny random Llama (CPU): it learns, is deterministic, resumes exactly, does LoRA."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from _tiny_lm import build_tiny_lm

from retrievekit.core.errors import InvalidInputError, MissingDependencyError
from retrievekit.core.llm import LocalLM
from retrievekit.core.training import (
    Segment,
    TrainConfig,
    TrainingExample,
    autocast_dtype,
    load_trained_model,
    read_model_manifest,
    train_causal_lm,
)

PAIRS = [
    ("what thins the blood", "aspirin"),
    ("power from sunlight", "solar panels"),
    ("power from moving air", "wind farms"),
    ("the roman empire", "history of rome"),
    ("shape of enzymes", "protein folding"),
    ("energy from the sun", "solar power"),
]
PROMPT = "Question: {q}\n Related document title: "
# On a random 32-wide model the output layer must adapt too for a visible effect in 60 steps.
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head")


def examples(n: int = len(PAIRS)) -> list[TrainingExample]:
    return [
        TrainingExample((Segment(PROMPT.format(q=q)), Segment(t, trainable=True)), kind="query-title")
        for q, t in PAIRS[:n]
    ]


def continuation_logprob(model, tok, q: str, title: str) -> float:
    """log P(title + EOS | BOS + prompt), tokenized exactly as the trainer does (segments separately)."""
    prompt = [tok.bos_token_id, *tok(PROMPT.format(q=q), add_special_tokens=False)["input_ids"]]
    target = [*tok(title, add_special_tokens=False)["input_ids"], tok.eos_token_id]
    return LocalLM(model, tok, use_outlines=False).sequence_logprob(prompt, target)


def first_param(model) -> torch.Tensor:
    return model.model.layers[0].self_attn.q_proj.weight.detach().clone()


def state(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


FULL = TrainConfig(max_steps=60, learning_rate=1e-2, batch_size=3, warmup_ratio=0.05, save_every_steps=0)


def test_full_finetune_learns_the_trained_continuation(tmp_path: Path):
    model, tok = build_tiny_lm()
    before = [continuation_logprob(model, tok, q, t) for q, t in PAIRS]
    seen: list[tuple[int, float]] = []
    res = train_causal_lm(
        model,
        tok,
        examples(),
        FULL,
        tmp_path,
        kind="self-retrieval",
        base_model="tiny",
        corpus_hash="c0ffee",
        settings={"prompt": PROMPT},
        progress=False,
        on_step=lambda s, loss: seen.append((s, loss)),
    )
    assert res.final_loss < 0.5 * res.loss_history[0]
    assert len(res.loss_history) == res.steps == 60 and [s for s, _ in seen] == list(range(1, 61))
    assert [loss for _, loss in seen] == list(res.loss_history)
    after = [continuation_logprob(model, tok, q, t) for q, t in PAIRS]
    assert all(a > b + 1.0 for a, b in zip(after, before, strict=True)), (before, after)
    assert not model.training and next(model.parameters()).dtype == torch.float32
    # bookkeeping
    assert res.device == "cpu" and res.precision == "float32" and res.peak_gpu_memory_bytes is None
    assert res.resumed_from_step == 0 and res.examples == 6 and res.epochs == pytest.approx(30.0)
    assert res.trained_tokens > res.loss_tokens > 0 and res.tokens_per_s > 0
    assert (tmp_path / "model").is_dir() and not (tmp_path / "checkpoint").exists()
    manifest = read_model_manifest(tmp_path)
    assert manifest.train["result"]["final_loss"] == res.final_loss
    assert manifest.train["config"] == FULL.to_dict() and manifest.train["data"]["n"] == 6
    # the saved model is the trained one
    loaded, ltok, _ = load_trained_model(
        tmp_path, kind="self-retrieval", corpus_hash="c0ffee", base_model="tiny", settings={"prompt": PROMPT}
    )
    assert continuation_logprob(loaded, ltok, *PAIRS[0]) == pytest.approx(after[0], abs=1e-4)


def test_same_seed_same_weights_and_losses(tmp_path: Path):
    cfg = TrainConfig(max_steps=12, learning_rate=5e-3, batch_size=2, grad_accum=2, save_every_steps=0)
    runs = []
    for i in range(2):
        model, tok = build_tiny_lm()
        res = train_causal_lm(
            model, tok, examples(), cfg, tmp_path / f"r{i}", kind="t", base_model="tiny", progress=False
        )
        runs.append((res.loss_history, first_param(model)))
    assert runs[0][0] == runs[1][0]
    assert torch.equal(runs[0][1], runs[1][1])
    model, tok = build_tiny_lm()
    other = train_causal_lm(
        model, tok, examples(), TrainConfig(**{**cfg.to_dict(), "seed": 1}), tmp_path / "r2", kind="t",
        base_model="tiny", progress=False,
    )  # fmt: skip
    assert other.loss_history != runs[0][0]  # the seed drives the data order


RESUME = TrainConfig(max_steps=20, learning_rate=5e-3, batch_size=2, grad_accum=2, save_every_steps=8, warmup_ratio=0.1)


class Crash(KeyboardInterrupt):
    pass


def crash_at(k: int):
    def on_step(step: int, loss: float) -> None:
        if step == k:
            raise Crash()

    return on_step


@pytest.mark.parametrize("crash_step", [8, 13])
def test_crash_then_resume_equals_an_uninterrupted_run(tmp_path: Path, crash_step: int):
    model, tok = build_tiny_lm()
    ref = train_causal_lm(model, tok, examples(), RESUME, tmp_path / "ref", kind="t", base_model="tiny", progress=False)
    ref_state = state(model)

    out = tmp_path / "run"
    model, tok = build_tiny_lm()
    with pytest.raises(Crash):
        train_causal_lm(
            model, tok, examples(), RESUME, out, kind="t", base_model="tiny", progress=False,
            on_step=crash_at(crash_step),
        )  # fmt: skip
    assert json.loads((out / "checkpoint" / "trainer_state.json").read_text())["step"] == 8
    assert not (out / "model").exists()

    model, tok = build_tiny_lm(seed=5)  # other initial weights: everything must come from the checkpoint
    steps: list[int] = []
    res = train_causal_lm(
        model, tok, examples(), RESUME, out, kind="t", base_model="tiny", progress=False,
        on_step=lambda s, _loss: steps.append(s),
    )  # fmt: skip
    assert res.resumed_from_step == 8 and steps == list(range(9, 21))
    assert res.loss_history == pytest.approx(ref.loss_history, rel=1e-5, abs=1e-6)
    assert res.trained_tokens == ref.trained_tokens and res.loss_tokens == ref.loss_tokens
    for name, value in state(model).items():
        torch.testing.assert_close(value, ref_state[name], rtol=1e-5, atol=1e-6, msg=name)
    assert not (out / "checkpoint").exists()


def test_checkpoint_of_other_data_or_config_is_refused(tmp_path: Path):
    model, tok = build_tiny_lm()
    with pytest.raises(Crash):
        train_causal_lm(
            model, tok, examples(), RESUME, tmp_path, kind="t", base_model="tiny", progress=False, on_step=crash_at(9)
        )
    model, tok = build_tiny_lm()
    with pytest.raises(InvalidInputError, match=r"other training data.*resume=False"):
        train_causal_lm(model, tok, examples(5), RESUME, tmp_path, kind="t", base_model="tiny", progress=False)
    other_cfg = TrainConfig(**{**RESUME.to_dict(), "learning_rate": 1e-3})
    with pytest.raises(InvalidInputError, match="learning_rate"):
        train_causal_lm(model, tok, examples(), other_cfg, tmp_path, kind="t", base_model="tiny", progress=False)
    # a changed checkpoint cadence is not a different run
    cadence = TrainConfig(**{**RESUME.to_dict(), "save_every_steps": 100})
    res = train_causal_lm(model, tok, examples(), cadence, tmp_path, kind="t", base_model="tiny", progress=False)
    assert res.resumed_from_step == 8
    # resume=False starts over on other data
    with pytest.raises(Crash):
        train_causal_lm(
            model, tok, examples(), RESUME, tmp_path, kind="t", base_model="tiny", progress=False, on_step=crash_at(9)
        )
    res = train_causal_lm(
        model, tok, examples(5), RESUME, tmp_path, kind="t", base_model="tiny", progress=False, resume=False
    )
    assert res.resumed_from_step == 0 and res.examples == 5


LORA = TrainConfig(
    max_steps=60, learning_rate=1e-2, batch_size=3, lora=True, lora_r=16, lora_alpha=32,
    lora_target_modules=ALL_LINEAR, save_every_steps=0, warmup_ratio=0.05,
)  # fmt: skip


def test_lora_trains_merges_and_saves_a_plain_model(tmp_path: Path):
    model, tok = build_tiny_lm()
    base = state(model)
    before = [continuation_logprob(model, tok, q, t) for q, t in PAIRS]
    res = train_causal_lm(model, tok, examples(), LORA, tmp_path, kind="judge", base_model="tiny", progress=False)
    assert res.lora and res.final_loss < 0.5 * res.loss_history[0]
    # merged in place: the caller's object is a plain model again, with changed linear weights only
    assert type(model).__name__ == "LlamaForCausalLM" and not any("lora" in n for n, _ in model.named_modules())
    now = state(model)
    assert set(now) == set(base)
    assert not torch.equal(
        now["model.layers.0.self_attn.q_proj.weight"], base["model.layers.0.self_attn.q_proj.weight"]
    )
    assert torch.equal(now["model.embed_tokens.weight"], base["model.embed_tokens.weight"])
    after = [continuation_logprob(model, tok, q, t) for q, t in PAIRS]
    assert all(a > b + 1.0 for a, b in zip(after, before, strict=True))
    # the saved folder is a plain transformers model: no adapter files, loads without peft
    files = {p.name for p in (tmp_path / "model").iterdir()}
    assert "model.safetensors" in files and not any("adapter" in f for f in files)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    plain = AutoModelForCausalLM.from_pretrained(str(tmp_path / "model")).eval()
    ptok = AutoTokenizer.from_pretrained(str(tmp_path / "model"))
    assert continuation_logprob(plain, ptok, *PAIRS[1]) == pytest.approx(after[1], abs=1e-4)


def test_lora_with_dropout_resumes_exactly(tmp_path: Path):
    cfg = TrainConfig(**{**LORA.to_dict(), "max_steps": 12, "save_every_steps": 5, "lora_dropout": 0.2})
    model, tok = build_tiny_lm()
    ref = train_causal_lm(model, tok, examples(), cfg, tmp_path / "ref", kind="j", base_model="tiny", progress=False)
    ref_state = state(model)
    model, tok = build_tiny_lm()
    with pytest.raises(Crash):
        train_causal_lm(
            model, tok, examples(), cfg, tmp_path / "run", kind="j", base_model="tiny", progress=False,
            on_step=crash_at(7),
        )  # fmt: skip
    # the crash handed back the plain base model
    assert not any("lora" in n for n, _ in model.named_modules())
    model, tok = build_tiny_lm()
    res = train_causal_lm(model, tok, examples(), cfg, tmp_path / "run", kind="j", base_model="tiny", progress=False)
    assert res.resumed_from_step == 5
    assert res.loss_history == pytest.approx(ref.loss_history, rel=1e-5, abs=1e-6)
    for name, value in state(model).items():
        torch.testing.assert_close(value, ref_state[name], rtol=1e-5, atol=1e-6, msg=name)


def test_lora_without_peft_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "peft", None)
    model, tok = build_tiny_lm()
    with pytest.raises(MissingDependencyError, match=r"retrievekit\[train\]"):
        train_causal_lm(model, tok, examples(), LORA, tmp_path, kind="j", base_model="tiny", progress=False)


def test_auto_dtype_is_fp32_on_cpu_and_bf16_autocast_and_checkpointing_run(tmp_path: Path):
    assert autocast_dtype(TrainConfig(), "cpu") is None
    assert autocast_dtype(TrainConfig(dtype="float32"), "cuda") is None
    base = TrainConfig(max_steps=4, learning_rate=5e-3, batch_size=3, save_every_steps=0)
    model, tok = build_tiny_lm()
    plain = train_causal_lm(model, tok, examples(), base, tmp_path / "a", kind="t", base_model="tiny", progress=False)
    assert plain.precision == "float32"
    model, tok = build_tiny_lm()
    ckpt_cfg = TrainConfig(**{**base.to_dict(), "gradient_checkpointing": True})
    ckpt = train_causal_lm(
        model, tok, examples(), ckpt_cfg, tmp_path / "b", kind="t", base_model="tiny", progress=False
    )
    assert ckpt.loss_history == pytest.approx(plain.loss_history, rel=1e-4)
    assert not model.is_activation_checkpointing
    model, tok = build_tiny_lm()
    bf16_cfg = TrainConfig(**{**base.to_dict(), "dtype": "bfloat16"})
    bf16 = train_causal_lm(
        model, tok, examples(), bf16_cfg, tmp_path / "c", kind="t", base_model="tiny", progress=False
    )
    assert bf16.precision == "bfloat16-autocast"
    assert bf16.loss_history[0] == pytest.approx(plain.loss_history[0], rel=0.05)
    assert next(model.parameters()).dtype == torch.float32  # fp32 master weights


def test_bad_calls(tmp_path: Path):
    model, tok = build_tiny_lm()
    with pytest.raises(InvalidInputError, match="no training examples"):
        train_causal_lm(model, tok, [], FULL, tmp_path, kind="t", base_model="tiny")
    with pytest.raises(InvalidInputError, match="TrainConfig"):
        train_causal_lm(model, tok, examples(), {"epochs": 1}, tmp_path, kind="t", base_model="tiny")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="kind"):
        train_causal_lm(model, tok, examples(), FULL, tmp_path, kind="", base_model="tiny")
    with pytest.raises(InvalidInputError, match="no trainable"):
        train_causal_lm(model, tok, [TrainingExample((Segment("x"),))], FULL, tmp_path, kind="t", base_model="tiny")
    with pytest.raises(InvalidInputError, match="JSON"):
        train_causal_lm(model, tok, examples(), FULL, tmp_path, kind="t", base_model="tiny", settings={"f": object()})
    if not torch.cuda.is_available():
        with pytest.raises(InvalidInputError, match="CUDA is not available"):
            train_causal_lm(model, tok, examples(), TrainConfig(device="cuda"), tmp_path, kind="t", base_model="tiny")
    assert not any(tmp_path.iterdir())  # nothing written by refused calls


@pytest.mark.gpu
def test_gpu_bf16_autocast_training_reports_memory_and_speed(tmp_path: Path):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    model, tok = build_tiny_lm()
    cfg = TrainConfig(max_steps=30, learning_rate=1e-2, batch_size=3, save_every_steps=10)
    res = train_causal_lm(model, tok, examples(), cfg, tmp_path, kind="t", base_model="tiny", progress=False)
    print(f"gpu: precision={res.precision} peak={res.peak_gpu_memory_bytes} tokens/s={res.tokens_per_s}")
    assert res.device.startswith("cuda") and res.precision == "bfloat16-autocast"
    assert res.peak_gpu_memory_bytes is not None and res.peak_gpu_memory_bytes > 0
    assert res.final_loss < 0.5 * res.loss_history[0]
    assert next(model.parameters()).device.type == "cuda" and not model.training


def test_max_seconds_ends_the_run_early_and_still_saves_the_model(tmp_path: Path):
    import time

    def slow_third_step(step: int, loss: float) -> None:
        if step == 3:
            time.sleep(2.5)  # the cap (2 s) passes here at the latest

    model, tok = build_tiny_lm()
    cfg = TrainConfig(**{**RESUME.to_dict(), "max_seconds": 2.0})
    res = train_causal_lm(model, tok, examples(), cfg, tmp_path / "capped", kind="t", base_model="tiny",
                          progress=False, on_step=slow_third_step)  # fmt: skip
    assert 1 <= res.steps <= 3 and res.planned_steps == 20 and res.stopped_early
    assert len(res.loss_history) == res.steps
    saved = read_model_manifest(tmp_path / "capped" / "model")
    assert saved.train["result"]["steps"] == res.steps and saved.train["result"]["planned_steps"] == 20
    assert not (tmp_path / "capped" / "checkpoint").exists()
    load_trained_model(tmp_path / "capped" / "model", kind="t")  # the early-stopped model loads
    model, tok = build_tiny_lm()
    whole = train_causal_lm(model, tok, examples(), RESUME, tmp_path / "whole", kind="t", base_model="tiny",
                            progress=False)  # fmt: skip
    assert whole.steps == whole.planned_steps == 20 and not whole.stopped_early
    with pytest.raises(InvalidInputError, match="max_seconds"):
        TrainConfig(max_seconds=0)
