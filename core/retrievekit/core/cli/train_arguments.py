"""The training command-line arguments every trainer shares, and the :class:`TrainConfig` they give.

``retrievekit train-judge``, ``retrievekit train-self-retrieval`` and the benchmark scripts that train declare the
same flags through :func:`add_train_arguments` and read them back with :func:`train_config_from_args`, so a flag
means the same everywhere and an unset flag keeps the trainer's own default.

Examples:
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_train_arguments(p, defaults={"epochs": 1.0})
    >>> cfg = train_config_from_args(p.parse_args(["--lora", "--max-steps", "5"]))
    >>> cfg.epochs, cfg.lora, cfg.max_steps, cfg.learning_rate
    (1.0, True, 5, 0.0002)
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from retrievekit.core.training.config import TrainConfig

__all__ = ["LORA_LEARNING_RATE", "TRAIN_FLAGS", "add_train_arguments", "train_config_from_args"]

LORA_LEARNING_RATE = 2e-4
"""The learning rate ``--lora`` uses when ``--lr`` is not given (full fine-tuning keeps ``TrainConfig``'s 2e-5)."""

TRAIN_FLAGS: dict[str, tuple[str, type, str]] = {
    "epochs": ("--epochs", float, "passes over the training data"),
    "learning_rate": ("--lr", float, f"learning rate (default: 2e-5 full, {LORA_LEARNING_RATE:g} with --lora)"),
    "batch_size": ("--batch-size", int, "instances per optimizer step"),
    "grad_accum": ("--grad-accum", int, "micro-batches per optimizer step"),
    "max_steps": ("--max-steps", int, "stop after N optimizer steps"),
    "max_length": ("--max-length", int, "token cap of a training instance"),
    "save_every_steps": ("--save-every", int, "checkpoint every N steps"),
}
"""``TrainConfig`` field -> (flag, type, help) of the shared flags (besides ``--lora``, ``--seed``, ``--device``,
``--no-resume``)."""


def add_train_arguments(parser: argparse.ArgumentParser, *, defaults: Mapping[str, Any] | None = None) -> None:
    """Add the shared training flags; ``defaults`` maps ``TrainConfig`` fields to this command's own defaults.

    A flag left unset (and without a command default) keeps ``TrainConfig``'s default.

    Examples:
        >>> p = argparse.ArgumentParser(); add_train_arguments(p)
        >>> p.parse_args(["--batch-size", "8"]).batch_size
        8
    """
    own = dict(defaults or {})
    base = TrainConfig()
    for field, (flag, kind, text) in TRAIN_FLAGS.items():
        default = own.get(field)
        shown = default if default is not None else getattr(base, field)
        parser.add_argument(flag, dest=field, type=kind, default=default, help=f"{text} (default: {shown})")
    parser.add_argument("--lora", action="store_true", help="train LoRA adapters (peft), merged at the end")
    parser.add_argument("--seed", type=int, default=int(own.get("seed", 0)), help="seed of everything random")
    parser.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    parser.add_argument("--no-resume", action="store_true", help="ignore an existing checkpoint")


def train_config_from_args(
    args: argparse.Namespace, *, lora_learning_rate: float | None = LORA_LEARNING_RATE, **overrides: Any
) -> TrainConfig:
    """The :class:`TrainConfig` of parsed flags: the flags that were set, then ``overrides``.

    With ``--lora`` and no ``--lr`` the learning rate is ``lora_learning_rate`` (``None``: ``TrainConfig``'s).

    Examples:
        >>> ns = argparse.Namespace(epochs=None, learning_rate=None, batch_size=4, grad_accum=None, max_steps=None,
        ...                         max_length=None, save_every_steps=None, lora=False, seed=3, device=None)
        >>> c = train_config_from_args(ns); c.batch_size, c.seed, c.learning_rate
        (4, 3, 2e-05)
    """
    kwargs: dict[str, Any] = {f: getattr(args, f) for f in TRAIN_FLAGS if getattr(args, f, None) is not None}
    lora = bool(getattr(args, "lora", False))
    if lora and "learning_rate" not in kwargs and lora_learning_rate is not None:
        kwargs["learning_rate"] = lora_learning_rate
    kwargs.update(lora=lora, seed=int(getattr(args, "seed", 0)), device=getattr(args, "device", None))
    kwargs.update(overrides)
    return TrainConfig(**kwargs)
