"""The schedule of a training run: how many optimizer steps, the learning rate at each, and which examples each
micro-batch holds (a permutation per epoch, seeded by ``(seed, epoch)``, so a resumed run sees the same batches)."""

from __future__ import annotations

import math

import numpy as np

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.training.config import TrainConfig

__all__ = ["learning_rate_factor", "plan_steps"]


def plan_steps(n_examples: int, config: TrainConfig) -> tuple[int, int, int]:
    """``(total optimizer steps, micro-batches per epoch, warmup steps)`` for ``n_examples`` instances.

    The last micro-batch of an epoch may be smaller; an optimizer step takes ``grad_accum`` consecutive
    micro-batches of the endless sequence of epochs.

    Examples:
        >>> plan_steps(100, TrainConfig(batch_size=16, epochs=3))
        (21, 7, 1)
        >>> plan_steps(100, TrainConfig(batch_size=16, max_steps=5))
        (5, 7, 1)
    """
    if n_examples < 1:
        raise InvalidInputError("no training examples")
    micro_per_epoch = math.ceil(n_examples / config.batch_size)
    if config.max_steps is not None:
        total = config.max_steps
    else:
        total = max(1, math.ceil(config.epochs * micro_per_epoch / config.grad_accum))
    warmup = math.ceil(config.warmup_ratio * total)
    return total, micro_per_epoch, warmup


def learning_rate_factor(step: int, total: int, warmup: int, scheduler: str) -> float:
    """Multiplier of the peak learning rate at optimizer step ``step`` (0-based), as in transformers' schedules.

    Examples:
        >>> [round(learning_rate_factor(s, 10, 2, "cosine"), 3) for s in (0, 1, 2, 6, 9)]
        [0.0, 0.5, 1.0, 0.5, 0.038]
        >>> learning_rate_factor(5, 10, 0, "constant")
        1.0
    """
    if step < warmup:
        return step / max(1, warmup)
    if scheduler == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)
    if scheduler == "linear":
        return max(0.0, 1.0 - progress)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))


class _BatchOrder:
    """Which instances each micro-batch holds: epoch ``e`` is a permutation seeded by ``(seed, e)``."""

    def __init__(self, n: int, batch_size: int, seed: int) -> None:
        self.n, self.batch_size, self.seed = n, batch_size, seed
        self.per_epoch = math.ceil(n / batch_size)
        self._epoch = -1
        self._perm: np.ndarray = np.arange(n)

    def micro_batch(self, m: int) -> list[int]:
        epoch, pos = divmod(m, self.per_epoch)
        if epoch != self._epoch:
            self._perm = np.random.default_rng([self.seed, epoch]).permutation(self.n)
            self._epoch = epoch
        return [int(i) for i in self._perm[pos * self.batch_size : (pos + 1) * self.batch_size]]
