"""The model made ready to train and given back afterwards: fp32 on the device, LoRA adapters (peft) when asked,
gradient checkpointing, the AdamW optimizer, and the adapters merged at the end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from retrievekit.core.errors import InvalidInputError, MissingDependencyError
from retrievekit.core.training.config import TrainConfig

__all__: list[str] = []

PEFT_HINT = 'pip install "retrievekit[train]"'


def _import_peft() -> Any:
    try:
        import peft
    except ImportError:
        raise MissingDependencyError("peft", PEFT_HINT, "needed for TrainConfig(lora=True)") from None
    return peft


def _set_checkpointing(model: Any, on: bool) -> None:
    """Turn activation (gradient) checkpointing on/off, with the transformers 5 name when it exists."""
    if hasattr(model, "activation_checkpointing_enable"):
        if on:
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.activation_checkpointing_disable()
    elif on:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_disable()


@dataclass(frozen=True)
class _Trainee:
    """The caller's model, the model trained (it, or its LoRA wrapper ``peft_model``), the optimizer and its params."""

    model: Any
    train_model: Any
    peft_model: Any
    optimizer: Any
    params: list[Any]


def _prepare_trainee(model: Any, config: TrainConfig, device: str) -> _Trainee:
    """The model made ready to train (:func:`_prepare_model`) with its optimizer (:func:`_make_optimizer`)."""
    train_model, peft_model = _prepare_model(model, config, device)
    optimizer, params = _make_optimizer(train_model, config)
    return _Trainee(model, train_model, peft_model, optimizer, params)


def _prepare_model(model: Any, config: TrainConfig, device: str) -> tuple[Any, Any]:
    """Seed, move to ``device`` in fp32, wrap in LoRA adapters if asked; returns ``(model to train, peft model)``."""
    import torch

    from retrievekit.core.llm.models import make_savable

    make_savable(model)
    torch.manual_seed(config.seed)
    model.to(device=device, dtype=torch.float32)
    train_model = model
    peft_model = None
    if config.lora:
        peft = _import_peft()
        lora_cfg = peft.LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            target_modules=list(config.lora_target_modules) if config.lora_target_modules else None,
            bias="none",
            task_type="CAUSAL_LM",
        )
        peft_model = peft.get_peft_model(model, lora_cfg)
        train_model = peft_model
    if config.gradient_checkpointing:
        _set_checkpointing(train_model, True)
    return train_model, peft_model


def _make_optimizer(train_model: Any, config: TrainConfig) -> tuple[Any, list[Any]]:
    """AdamW with weight decay on the matrices only; returns it and the trainable parameters."""
    import torch

    decay: list[Any] = []
    no_decay: list[Any] = []
    for _name, p in train_model.named_parameters():
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    params = decay + no_decay
    if not params:
        raise InvalidInputError("the model has no trainable parameters")
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": config.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=config.learning_rate,
    )
    return optimizer, params


def _finish_model(trainee: _Trainee, config: TrainConfig) -> Any:
    """Checkpointing off, LoRA adapters merged, eval mode; returns the trained model."""
    model = trainee.model
    if config.gradient_checkpointing:
        _set_checkpointing(trainee.train_model, False)
    if trainee.peft_model is not None:
        merged = trainee.peft_model.merge_and_unload()
        if merged is not model:  # pragma: no cover - peft returns the base model object it injected into
            model = merged
    model.eval()
    return model
