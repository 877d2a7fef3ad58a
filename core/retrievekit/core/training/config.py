"""Fine-tuning settings (:class:`TrainConfig`), with the Self-Retrieval reference defaults.

"Reference" is the training script of Self-Retrieval's authors, ``icip-cas/SelfRetrieval`` ``sft.sh`` (DeepSpeed
ZeRO-2 on 8 GPUs, bf16). The paper (arXiv 2403.00801, §5.2) reports 5 epochs; the script runs 3, the default here.

Examples:
    >>> cfg = TrainConfig(max_steps=10, batch_size=4)
    >>> TrainConfig.from_dict(cfg.to_dict()) == cfg
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from retrievekit.core.errors import InvalidInputError

__all__ = ["DTYPES", "SCHEDULERS", "TrainConfig"]

SCHEDULERS = ("cosine", "linear", "constant")
DTYPES = ("auto", "float32", "bfloat16")

# Fields that do not change which batches are seen or what the weights become: a checkpoint stays resumable
# when only these differ.
_RESUME_FREE = frozenset({"save_every_steps", "device", "gradient_checkpointing", "max_seconds"})


@dataclass(frozen=True)
class TrainConfig:
    """Causal-LM fine-tuning settings.

    Attributes:
        epochs: passes over the data (reference ``sft.sh``: 3; paper §5.2: 5); fractions allowed.
        learning_rate: peak AdamW learning rate (reference ``sft.sh``: 2e-5; LoRA usually wants ~1e-4..1e-3).
        batch_size: instances per micro-batch, before accumulation (reference ``sft.sh``: 16 per GPU).
        grad_accum: micro-batches per optimizer step (reference ``sft.sh``: 1, on 8 GPUs x 16).
        warmup_ratio: share of the steps with a linear warmup (reference ``sft.sh``: 0.03).
        scheduler: ``"cosine"`` (reference ``sft.sh``), ``"linear"`` or ``"constant"`` decay after warmup.
        weight_decay: AdamW weight decay on matrices (HF Trainer default 0.0; biases/norms never decay).
        max_grad_norm: gradient-norm clip (HF Trainer default 1.0; <= 0 disables).
        max_length: token cap of an instance (reference ``sft.sh``: 2048; 512 fits SmolLM2 instances).
        max_steps: optimizer steps; overrides ``epochs`` when set.
        lora: train LoRA adapters (peft) instead of all weights; they are merged at the end.
        lora_r: LoRA rank (peft's common default is 8; 16 for small models here).
        lora_alpha: LoRA scaling numerator (2 x r, the usual choice).
        lora_dropout: dropout on the LoRA input (peft examples: 0.05).
        lora_target_modules: module names to adapt; None: peft's default for the architecture.
        dtype: ``"auto"`` (bf16 autocast on CUDA, fp32 on CPU), ``"float32"`` or ``"bfloat16"`` (autocast). Master
            weights and optimizer state are always fp32 (reference ``sft.sh`` trains in bf16 with DeepSpeed).
        gradient_checkpointing: recompute activations in the backward pass (reference ``sft.sh``: on; off here);
            saves memory at the cost of time.
        save_every_steps: resumable checkpoint cadence in optimizer steps (0: only the final model).
        seed: seed of the data order, LoRA init and dropout.
        device: torch device; None: CUDA when available, else CPU.
        max_seconds: a wall-clock cap on this call's training loop (ours, for fixed-budget machines): training ends
            after the first optimizer step past it and saves the model as usual. The schedule is still planned for
            ``epochs`` (it stops part way down its decay); the result's ``steps`` and ``planned_steps`` say how far
            it got. None: no cap.

    Examples:
        >>> TrainConfig().learning_rate, TrainConfig().scheduler
        (2e-05, 'cosine')
        >>> TrainConfig(batch_size=0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: batch_size must be an int >= 1, got 0
    """

    epochs: float = 3.0
    learning_rate: float = 2e-5
    batch_size: int = 16
    grad_accum: int = 1
    warmup_ratio: float = 0.03
    scheduler: str = "cosine"
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_length: int = 512
    max_steps: int | None = None
    lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target_modules: tuple[str, ...] | None = None
    dtype: str = "auto"
    gradient_checkpointing: bool = False
    save_every_steps: int = 200
    seed: int = 0
    device: str | None = None
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        def need_int(name: str, lo: int) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise InvalidInputError(f"{name} must be an int >= {lo}, got {v!r}")

        def need_float(name: str, lo: float, hi: float = math.inf, lo_open: bool = False) -> None:
            v = getattr(self, name)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            ok = ok and (v > lo if lo_open else v >= lo) and v <= hi
            if not ok:
                bound = f"> {lo}" if lo_open else f">= {lo}"
                raise InvalidInputError(
                    f"{name} must be a finite number {bound}"
                    + (f" and <= {hi}" if hi < math.inf else "")
                    + f", got {v!r}"
                )

        need_int("batch_size", 1)
        need_int("grad_accum", 1)
        need_int("max_length", 2)
        need_int("lora_r", 1)
        need_int("lora_alpha", 1)
        need_int("save_every_steps", 0)
        need_int("seed", 0)
        need_float("epochs", 0.0, lo_open=True)
        need_float("learning_rate", 0.0, lo_open=True)
        need_float("warmup_ratio", 0.0, 1.0)
        need_float("weight_decay", 0.0)
        need_float("max_grad_norm", -math.inf)
        need_float("lora_dropout", 0.0, 1.0)
        if self.max_steps is not None:
            need_int("max_steps", 1)
        if self.max_seconds is not None:
            need_float("max_seconds", 0.0, lo_open=True)
        if self.scheduler not in SCHEDULERS:
            raise InvalidInputError(f"scheduler must be one of {SCHEDULERS}, got {self.scheduler!r}")
        if self.dtype not in DTYPES:
            raise InvalidInputError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.lora_target_modules is not None:
            mods = self.lora_target_modules
            if isinstance(mods, str) or not all(isinstance(m, str) and m for m in mods):
                raise InvalidInputError("lora_target_modules must be a sequence of module names (or None)")
            object.__setattr__(self, "lora_target_modules", tuple(mods))
        if self.device is not None and not isinstance(self.device, str):
            object.__setattr__(self, "device", str(self.device))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (tuples become lists).

        Examples:
            >>> TrainConfig(lora_target_modules=("q_proj",)).to_dict()["lora_target_modules"]
            ['q_proj']
        """
        d = asdict(self)
        if d["lora_target_modules"] is not None:
            d["lora_target_modules"] = list(d["lora_target_modules"])
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrainConfig:
        """Rebuild a config from :meth:`to_dict` output; unknown keys raise ``InvalidInputError``.

        Examples:
            >>> TrainConfig.from_dict({"epochs": 1, "seed": 3}).seed
            3
            >>> TrainConfig.from_dict({"epoch": 1})
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: unknown TrainConfig fields: ['epoch']
        """
        if not isinstance(d, Mapping):
            raise InvalidInputError(f"TrainConfig.from_dict needs a mapping, got {type(d).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise InvalidInputError(f"unknown TrainConfig fields: {unknown}")
        kwargs = dict(d)
        if kwargs.get("lora_target_modules") is not None:
            kwargs["lora_target_modules"] = tuple(kwargs["lora_target_modules"])
        return cls(**kwargs)

    def resume_key(self) -> dict[str, Any]:
        """The fields a checkpoint must share to be resumed (all but cadence, device and checkpointing).

        Examples:
            >>> TrainConfig(save_every_steps=5).resume_key() == TrainConfig(save_every_steps=7).resume_key()
            True
        """
        return {k: v for k, v in self.to_dict().items() if k not in _RESUME_FREE}
