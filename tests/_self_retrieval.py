"""Self-Retrieval test data: a 20-document animal/colour corpus with its query pairs, a tiny random Llama whose BPE
tokenizer is trained on it (offline), and ``train_small`` to train it for a few steps.

Shared by the Self-Retrieval core tests (tests/core/generative) and the framework-edge tests (tests/integrations).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _tiny_lm import build_tiny_lm

from retrievekit.core.generative.self_retrieval import SelfRetrievalConfig, train_self_retrieval
from retrievekit.core.training import TrainConfig
from retrievekit.core.types import Passage

ANIMALS = "cat dog fox owl bee ant cow pig elk yak bat eel hen ram emu koi gnu ape rat boa".split()
COLORS = "red blue green pink gold gray teal navy lime plum rose sand jade ruby onyx mint sage rust wine snow".split()
DOCS = [
    Passage(
        id=f"d{i}",
        title=ANIMALS[i],
        text=f"The {ANIMALS[i]} lives near the {COLORS[i]} river. Its fur shines in the {COLORS[i]} light all day.",
    )
    for i in range(20)
]
PAIRS = [(f"Which animal has {COLORS[i]} fur?", f"d{i}") for i in range(20)]
SMALL_CFG = SelfRetrievalConfig(neg_num=2, candidate_titles=0, qa_repeat_times=1)


def build_lm(seed: int = 0) -> tuple[Any, Any]:
    """A ~100k-parameter random Llama with a BPE tokenizer trained on DOCS and the prompt words (offline)."""
    words = "Question: Related document title: content: Final answer: cannot extract answer the document answers"
    return build_tiny_lm(
        seed,
        chat_template=False,
        texts=[d.text for d in DOCS] * 3 + ANIMALS + [words],
        vocab_size=400,
        hidden_size=64,
        max_positions=512,
    )


def train_small(out: Path, steps: int, corpus: list[Passage] = DOCS, **kw: Any) -> Any:
    model, tok = build_lm()
    tcfg = TrainConfig(max_steps=steps, batch_size=16, learning_rate=3e-3, warmup_ratio=0.0, save_every_steps=0)
    return train_self_retrieval(
        corpus,
        pairs=PAIRS,
        output_dir=out,
        model=model,
        tokenizer=tok,
        llm="tiny",
        config=SMALL_CFG,
        train_config=kw.pop("train_config", tcfg),
        progress=False,
        **kw,
    )
