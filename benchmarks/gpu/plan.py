"""The GPU run plan: which runs, in which order, with which settings (``full`` for the GPU, ``tiny`` for CPU tests).

Settings follow the method pages: the judge trains one epoch on SciFact *train* qrels with 3 BM25 hard negatives per
positive and reranks the hybrid top-100 (issue #9); Self-Retrieval trains 3 epochs at lr 2e-5 with a global batch
of 128 (the reference ``sft.sh``: 16 per GPU on 8 GPUs; here 64 x 2 accumulated micro-batches on one GPU, which
puts the 60,964 instances of the whole SciFact corpus plus its train claims at about 1,430 optimizer steps). A
session has 15 minutes of GPU time in all, so the ``full`` plan cuts that to 1.4 epochs (about 667 steps, 320 s at
the first run's 0.48 s per step, so that the one call that also builds the data, about 160 s, stays under the
machine's 600 s per call) under a 330-second cap (``TrainConfig.max_seconds``: the run ends, and saves, at the
first step past it), at lr 1e-4: the reference's 2e-5 is set for 7B models, and on the first whole-corpus run
(H200, 2026-11-27: 418 steps, 0.88 epoch in 200 s) it moved SmolLM2-135M's loss only from 2.65 to 2.18.
``sr-export`` then sends the model back in bf16 (about 270 MB: 18 parts of 15 MiB, 3 a call, since a returned file
is at most 16 MiB and a call sends back at most 8 files and 64 MiB with its results and state;
:func:`check_returns`) so that its evaluation and MindRef's can finish on CPU.
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

__all__ = ["PROFILES", "RETURN_LIMITS", "STEPS", "check_returns", "plan_for"]

#: What one call of the GPU machine sends back: at most 8 files, 16 MiB each, 64 MiB together. The third run
#: (H200, 2026-11-27) lost its first export parts to this: they were 28 MiB, and were left out.
RETURN_LIMITS = {"files": 8, "file_mib": 16, "total_mib": 64}

#: Room kept for the other files of a call: ``results.json``, ``state.tar`` (records: a few MiB) and a log.
_OTHER_FILES, _OTHER_MIB = 3, 8

#: The judge's LoRA adapts every linear layer of a Llama block (rank 8: about 5M weights, a 10 MB adapter for
#: SmolLM2-135M; lr 3e-4, the usual LoRA range, ``TrainConfig.learning_rate``).
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

#: Every step, in run order (the judge, then Self-Retrieval; its model is exported before anything else runs, so that
#: it comes back even when the GPU time does not reach the end; then the throughput run, which needs a GPU, before the
#: two evaluations, which can also finish on CPU from the exported model).
STEPS = ("judge-train", "judge-eval", "judge-export", "sr-train", "sr-export", "throughput", "sr-eval", "mindref")

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
                "epochs": 1.4,
                "learning_rate": 1e-4,
                "batch_size": 64,
                "grad_accum": 2,
                "save_every_steps": 100,
                "max_seconds": 330.0,
            }
        },
        "mindref": {"options": {"widen_to_k": False}},
        "throughput": {"beams": [1, 10, 50], "steps": 16, "repeats": 5},
        "export": {"part_mib": 15, "parts_per_call": 3},
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


#: Only the constrained-decoding throughput, with the full plan's settings: for a call that measures it again after a
#: change to the constraints (the other steps' results are already in hand, so nothing is trained).
PROFILES["throughput"] = {**copy.deepcopy(PROFILES["full"]), "steps": ["throughput"]}


def plan_for(profile: str) -> dict[str, Any]:
    """A copy of a profile's plan with the step order added (all of :data:`STEPS` unless the profile names its own).

    Example:
        >>> plan_for("nope")
        Traceback (most recent call last):
        ...
        KeyError: "unknown profile 'nope'; known: ['full', 'throughput', 'tiny']"
    """
    if profile not in PROFILES:
        raise KeyError(f"unknown profile {profile!r}; known: {sorted(PROFILES)}")
    return {"steps": list(STEPS), **copy.deepcopy(PROFILES[profile])}


def check_returns(plan: dict[str, Any]) -> None:
    """Raise ``ValueError`` when a call's export parts could not all come back (:data:`RETURN_LIMITS`).

    Example:
        >>> check_returns(plan_for("full"))
        >>> check_returns({"export": {"part_mib": 28, "parts_per_call": 2}})
        Traceback (most recent call last):
        ...
        ValueError: export parts of 28 MiB are over the 16 MiB a returned file may have
    """
    part, per_call = float(plan["export"]["part_mib"]), int(plan["export"]["parts_per_call"])
    if part > RETURN_LIMITS["file_mib"]:
        raise ValueError(
            f"export parts of {part:g} MiB are over the {RETURN_LIMITS['file_mib']} MiB a returned file may have"
        )
    if per_call + _OTHER_FILES > RETURN_LIMITS["files"] or part * per_call + _OTHER_MIB > RETURN_LIMITS["total_mib"]:
        raise ValueError(
            f"{per_call} export parts of {part:g} MiB a call, with results and state, are over what a call sends back"
            f" ({RETURN_LIMITS['files']} files, {RETURN_LIMITS['total_mib']} MiB)"
        )
