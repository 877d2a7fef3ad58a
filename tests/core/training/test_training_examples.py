"""Training instances: encoding (labels, BOS/EOS, truncation), batching, config validation. No training here."""

from __future__ import annotations

import pytest
from _tiny_lm import build_tiny_lm

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.training import (
    IGNORE_INDEX,
    EncodedExample,
    Segment,
    TrainConfig,
    TrainingExample,
    collate,
    encode_example,
    encode_examples,
    examples_fingerprint,
    learning_rate_factor,
    plan_steps,
)


@pytest.fixture(scope="module")
def tok():
    return build_tiny_lm()[1]


def ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def test_labels_are_ignored_exactly_on_non_trainable_spans(tok):
    segs = (
        Segment("Question: the blood\n Title: "),
        Segment("aspirin", True),
        Segment(" content: "),
        Segment("x", True),
    )
    enc = encode_example(TrainingExample(segs, kind="index"), tok, max_length=256)
    parts = [ids(tok, s.text) for s in segs]
    want_ids = [tok.bos_token_id] + [t for p in parts for t in p] + [tok.eos_token_id]
    want_labels = [IGNORE_INDEX]
    for s, p in zip(segs, parts, strict=True):
        want_labels += p if s.trainable else [IGNORE_INDEX] * len(p)
    want_labels.append(tok.eos_token_id)  # EOS appended, trainable
    assert list(enc.input_ids) == want_ids
    assert list(enc.labels) == want_labels
    assert not enc.truncated
    assert enc.n_loss_tokens == len(parts[1]) + len(parts[3]) + 1


def test_no_bos_no_eos_options(tok):
    ex = TrainingExample((Segment("Wind "), Segment("farms", True)), add_eos=False, add_bos=False)
    enc = encode_example(ex, tok, max_length=64)
    assert list(enc.input_ids) == ids(tok, "Wind ") + ids(tok, "farms")
    assert enc.input_ids[-1] != tok.eos_token_id
    assert enc.labels[0] == IGNORE_INDEX


def test_truncation_from_the_right_sets_the_flag(tok):
    prompt = "The history of Rome spans many centuries. " * 3
    ex = TrainingExample((Segment(prompt), Segment("Solar panels convert sunlight", True)), kind="index")
    full = encode_example(ex, tok, max_length=512)
    n_prompt = 1 + len(ids(tok, prompt))
    cut = encode_example(ex, tok, max_length=n_prompt + 2)
    assert cut.truncated and not full.truncated
    assert cut.input_ids == full.input_ids[: n_prompt + 2]
    assert cut.labels == full.labels[: n_prompt + 2]
    assert cut.n_loss_tokens == 2
    assert cut.input_ids[-1] != tok.eos_token_id  # EOS was cut with the tail


def test_no_trainable_token_left_after_truncation_names_the_kind(tok):
    ex = TrainingExample((Segment("The history of Rome spans many centuries."), Segment("Rome", True)), kind="reject")
    with pytest.raises(InvalidInputError, match=r"'reject' example has no trainable token left after truncation"):
        encode_example(ex, tok, max_length=4)


def test_example_without_trainable_segment_is_rejected(tok):
    with pytest.raises(InvalidInputError, match="no trainable segment"):
        encode_example(TrainingExample((Segment("only a prompt"),), kind="judge-yes"), tok, max_length=64)
    empty = TrainingExample((Segment("prompt"), Segment("", True)), add_eos=False, kind="x")
    with pytest.raises(InvalidInputError, match="trainable segments are empty"):
        encode_example(empty, tok, max_length=64)


def test_bad_inputs(tok):
    with pytest.raises(InvalidInputError):
        Segment(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        TrainingExample("not segments")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        TrainingExample(("a", "b"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="max_length"):
        encode_example(TrainingExample((Segment("a", True),)), tok, max_length=1)
    with pytest.raises(InvalidInputError, match="TrainingExample"):
        encode_example("text", tok, max_length=8)  # type: ignore[arg-type]


def test_segments_list_is_frozen_to_a_tuple():
    ex = TrainingExample([Segment("a"), Segment("b", True)])  # type: ignore[arg-type]
    assert isinstance(ex.segments, tuple) and hash(ex) == hash(TrainingExample((Segment("a"), Segment("b", True))))


def test_encode_examples_stats_and_fingerprint(tok):
    exs = [
        TrainingExample((Segment("Q: "), Segment("aspirin", True)), kind="query-title"),
        TrainingExample(
            (Segment("S: "), Segment("Wind farms generate power from moving air. " * 4, True)), kind="index"
        ),
        TrainingExample((Segment("Q: "), Segment("rome", True)), kind="query-title"),
    ]
    enc, stats = encode_examples(exs, tok, max_length=30)
    assert stats["n"] == 3 and stats["truncated"] == 1
    assert stats["kind:query-title"] == 2 and stats["kind:index"] == 1
    assert stats["tokens"] == sum(len(e.input_ids) for e in enc)
    assert stats["loss_tokens"] == sum(e.n_loss_tokens for e in enc)
    assert examples_fingerprint(enc) == examples_fingerprint(encode_examples(exs, tok, max_length=30)[0])
    assert examples_fingerprint(enc) != examples_fingerprint(enc[::-1])


def test_collate_right_pads():
    a = EncodedExample((1, 5, 6, 2), (-100, 5, 6, 2), False)
    b = EncodedExample((1, 7), (-100, 7), True)
    batch = collate([a, b], pad_id=0)
    assert batch["input_ids"].tolist() == [[1, 5, 6, 2], [1, 7, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 0, 0]]
    assert batch["labels"].tolist() == [[-100, 5, 6, 2], [-100, 7, -100, -100]]
    assert str(batch["input_ids"].dtype) == "torch.int64"
    with pytest.raises(InvalidInputError):
        collate([], pad_id=0)


def test_config_validation_and_round_trip():
    cfg = TrainConfig(lora=True, lora_target_modules=["q_proj", "v_proj"], max_steps=3)  # type: ignore[arg-type]
    assert cfg.lora_target_modules == ("q_proj", "v_proj")
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    for bad in (
        {"scheduler": "step"},
        {"dtype": "float16"},
        {"epochs": 0},
        {"learning_rate": float("nan")},
        {"warmup_ratio": 1.5},
        {"max_steps": 0},
        {"grad_accum": 0},
        {"lora_target_modules": "q_proj"},
        {"save_every_steps": -1},
        {"batch_size": True},
    ):
        with pytest.raises(InvalidInputError):
            TrainConfig(**bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="unknown"):
        TrainConfig.from_dict({"lr": 1.0})
    assert TrainConfig(save_every_steps=1, device="cpu").resume_key() == TrainConfig().resume_key()
    assert TrainConfig(seed=1).resume_key() != TrainConfig().resume_key()


def test_step_plan_and_schedules():
    assert plan_steps(10, TrainConfig(batch_size=4, epochs=3)) == (9, 3, 1)
    assert plan_steps(10, TrainConfig(batch_size=4, epochs=3, grad_accum=2)) == (5, 3, 1)
    assert plan_steps(10, TrainConfig(batch_size=4, epochs=0.5))[0] == 2
    with pytest.raises(InvalidInputError):
        plan_steps(0, TrainConfig())
    cos = [learning_rate_factor(s, 100, 10, "cosine") for s in range(100)]
    assert cos[0] == 0 and cos[10] == 1 and all(a >= b for a, b in zip(cos[10:], cos[11:], strict=False))
    lin = [learning_rate_factor(s, 100, 0, "linear") for s in range(100)]
    assert lin[0] == 1 and lin[50] == pytest.approx(0.5)
    assert {learning_rate_factor(s, 100, 5, "constant") for s in range(5, 100)} == {1.0}
