"""The GPU run plan: which runs, in which order, with which settings (``full`` for the GPU, ``tiny`` for CPU tests).

Settings follow the method pages: the judge trains one epoch on SciFact *train* qrels with 3 BM25 hard negatives per
positive and reranks the hybrid top-100 (issue #9); Self-Retrieval trains 3 epochs at lr 2e-5 with a global batch
of 128 (the reference ``sft.sh``: 16 per GPU on 8 GPUs; here 64 x 2 accumulated micro-batches on one GPU, which
puts the 60,964 instances of the whole SciFact corpus plus its train claims at about 1,430 optimizer steps). A
session has 15 minutes of GPU time in all, so the ``full`` plan cuts that to 1.5 epochs (about 715 steps) under a
360-second cap (``TrainConfig.max_seconds``: the run ends, and saves, at the first step past it), at lr 1e-4: the
reference's 2e-5 is set for 7B models, and on the first whole-corpus run (H200, 2026-11-27: 418 steps, 0.88 epoch
in 200 s) it moved SmolLM2-135M's loss only from 2.65 to 2.18. ``sr-export`` then sends the model back in bf16
(about 270 MB, 2 parts of 28 MiB per call) so that its evaluation and MindRef's can finish on CPU.
MindRef keeps the paper's 2 hits (``widen_to_k=false``); the throughput run compares beam
widths 1, 10 and 50. ``save_every_steps`` sets how often training can pause (a checkpoint) inside a call.

Example:
    >>> plan_for("full")["steps"][:3]
    ['judge-train', 'judge-eval', 'judge-export']
    >>> plan_for("tiny")["throughput"]["beams"]
    [1, 2]
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["PROFILES", "STEPS", "plan_for"]

#: The judge's LoRA adapts every linear layer of a Llama block (rank 8: about 5M weights, a 10 MB adapter for
#: SmolLM2-135M; lr 3e-4, the usual LoRA range, ``TrainConfig.learning_rate``).
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

#: Every step, in run order (the issue's order: judge, Self-Retrieval, MindRef over it, throughput; the
#: Self-Retrieval model is exported before its evaluation, so that it comes back even when the GPU time does not
#: reach the end).
STEPS = ("judge-train", "judge-eval", "judge-export", "sr-train", "sr-export", "sr-eval", "mindref", "throughput")

PROFILES: dict[str, dict[str, Any]] = {
    "full": {
        "limit": None,
        "judge": {
            "train": {
                "epochs": 1.0,
                "save_every_steps": 100,
                "lora": True,
                "lora_r": 8,
                "lora_alpha": 16,
                "lora_target_modules": list(ALL_LINEAR),
                "learning_rate": 3e-4,
            },
            "negatives": 3,
            "max_pairs": None,
            "rerank_k": 100,
            "score_batch_size": 64,
        },
        "self_retrieval": {
            "train": {
                "epochs": 1.0,
                "learning_rate": 2e-5,
                "batch_size": 64,
                "grad_accum": 2,
                "save_every_steps": 100,
                "max_seconds": 200.0,
            }
        },
        "mindref": {"options": {"widen_to_k": False}},
        "throughput": {"beams": [1, 10, 50], "steps": 16, "repeats": 3},
        "export": {"part_mib": 28, "parts_per_call": 2},
    },
    "tiny": {
        "limit": 3,
        "judge": {
            "train": {
                "max_steps": 4,
                "batch_size": 4,
                "learning_rate": 1e-3,
                "save_every_steps": 1,
                "lora": True,
                "lora_r": 8,
                "lora_alpha": 16,
                "lora_target_modules": list(ALL_LINEAR),
            },
            "negatives": 1,
            "max_pairs": 8,
            "rerank_k": 5,
            "score_batch_size": 8,
        },
        "self_retrieval": {"train": {"max_steps": 3, "batch_size": 4, "learning_rate": 1e-3, "save_every_steps": 1}},
        "mindref": {
            "options": {
                "widen_to_k": False,
                "title_beams": 3,
                "passage_beams": 2,
                "prefix_tokens": 4,
                "passage_tokens": 8,
                "title_max_new_tokens": 8,
            }
        },  # fmt: skip
        "throughput": {"beams": [1, 2], "steps": 4, "repeats": 1},
        "export": {"part_mib": 0.02, "parts_per_call": 3},
    },
}


def plan_for(profile: str) -> dict[str, Any]:
    """A copy of a profile's plan with the step order added.

    Example:
        >>> plan_for("nope")
        Traceback (most recent call last):
        ...
        KeyError: "unknown profile 'nope'; known: ['full', 'tiny']"
    """
    if profile not in PROFILES:
        raise KeyError(f"unknown profile {profile!r}; known: {sorted(PROFILES)}")
    return {"steps": list(STEPS), **copy.deepcopy(PROFILES[profile])}
