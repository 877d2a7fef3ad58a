"""LoRA adapters kept apart from their base model: a few MB to ship, merged back into the base at load time.

A model trained with ``TrainConfig(lora=True)`` is saved twice: merged (``model/``, loads with transformers alone) and
as its adapter (``adapter/``): ``adapter.safetensors`` with, for every adapted linear layer ``NAME``, the tensors
``NAME.lora_A`` (r x in), ``NAME.lora_B`` (out x r) and ``NAME.scaling`` (peft's ``lora_alpha / r``), beside the same
``retrievekit_model.json`` manifest (with checksums) as a full model folder. Loading an adapter folder loads the base
model the manifest names, adds ``scaling * B @ A`` to each layer's weight in float32 (what peft's
``merge_and_unload`` does for plain linear layers) and needs neither peft nor the merged weights.

Examples:
    >>> import tempfile
    >>> is_adapter_folder(tempfile.mkdtemp())
    False
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from retrievekit.core.errors import IndexFormatError, ModelMismatchError

__all__ = ["ADAPTER_FILE", "ADAPTER_SUBDIR", "is_adapter_folder", "lora_tensors", "merge_adapter", "write_adapter"]

ADAPTER_FILE = "adapter.safetensors"
ADAPTER_SUBDIR = "adapter"
_A, _B, _SCALING = ".lora_A", ".lora_B", ".scaling"


def is_adapter_folder(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a saved LoRA adapter (``adapter.safetensors``).

    Examples:
        >>> is_adapter_folder("no/such/folder")
        False
    """
    return (Path(folder) / ADAPTER_FILE).is_file()


def lora_tensors(peft_model: Any) -> dict[str, Any]:
    """The trained adapter of a peft LoRA model as plain CPU float32 tensors, keyed by the base model's layer names.

    Only layers whose LoRA is a single adapter over a plain weight are supported (peft's defaults); a layer with
    DoRA or several adapters is refused rather than saved wrongly.

    Examples:
        >>> lora_tensors(object())
        {}
    """
    import torch

    out: dict[str, Any] = {}
    prefix = "base_model.model."
    for name, module in getattr(peft_model, "named_modules", lambda: [])():
        a = getattr(module, "lora_A", None)
        if a is None or not hasattr(module, "scaling"):
            continue
        if list(a.keys()) != ["default"] or getattr(module, "use_dora", {}).get("default", False):
            raise IndexFormatError(f"cannot save the LoRA of {name}: only one plain 'default' adapter is supported")
        if getattr(module, "fan_in_fan_out", False):
            raise IndexFormatError(f"cannot save the LoRA of {name}: fan_in_fan_out layers are not supported")
        base = name[len(prefix) :] if name.startswith(prefix) else name
        out[base + _A] = module.lora_A["default"].weight.detach().to("cpu", torch.float32).contiguous()
        out[base + _B] = module.lora_B["default"].weight.detach().to("cpu", torch.float32).contiguous()
        out[base + _SCALING] = torch.tensor(float(module.scaling["default"]), dtype=torch.float32)
    return out


def write_adapter(tensors: dict[str, Any], folder: str | os.PathLike[str]) -> Path:
    """Write an adapter (:func:`lora_tensors`) as ``folder/adapter.safetensors``; returns the file.

    :func:`~retrievekit.core.training.manifest.save_trained_adapter` writes it with its manifest, atomically.

    Examples:
        >>> import tempfile, torch
        >>> t = {"lin.lora_A": torch.zeros(1, 2), "lin.lora_B": torch.zeros(2, 1), "lin.scaling": torch.tensor(2.0)}
        >>> write_adapter(t, tempfile.mkdtemp()).name
        'adapter.safetensors'
    """
    from safetensors.torch import save_file

    if not tensors:
        raise IndexFormatError("no LoRA tensors to save (was the model trained with lora=True?)")
    path = Path(folder) / ADAPTER_FILE
    save_file(dict(sorted(tensors.items())), str(path), metadata={"format": "retrievekit-lora"})
    return path


def merge_adapter(model: Any, folder: str | os.PathLike[str]) -> Any:
    """Add the adapter in ``folder`` to ``model``'s weights in place (``W += scaling * B @ A``, in float32).

    Raises:
        ModelMismatchError: a layer the adapter names is missing from ``model`` or has another shape (the adapter
            was trained on another base model).
        IndexFormatError: the adapter file is unreadable or incomplete.

    Examples:
        >>> import tempfile, torch
        >>> lin = torch.nn.Sequential(torch.nn.Linear(2, 2, bias=False))
        >>> _ = torch.nn.init.zeros_(lin[0].weight)
        >>> t = {"0.lora_A": torch.ones(1, 2), "0.lora_B": torch.ones(2, 1), "0.scaling": torch.tensor(0.5)}
        >>> merge_adapter(lin, write_adapter(t, tempfile.mkdtemp()).parent)[0].weight.tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """
    import torch
    from safetensors.torch import load_file

    path = Path(folder) / ADAPTER_FILE
    try:
        tensors = load_file(str(path))
    except Exception as e:  # safetensors raises its own SafetensorError for a damaged header
        raise IndexFormatError(f"could not read the adapter {path}: {e}") from e
    names = sorted({k[: -len(_A)] for k in tensors if k.endswith(_A)})
    if not names:
        raise IndexFormatError(f"{path} holds no LoRA layers")
    modules = dict(model.named_modules())
    with torch.no_grad():
        for name in names:
            try:
                a, b, scaling = tensors[name + _A], tensors[name + _B], tensors[name + _SCALING]
            except KeyError as e:
                raise IndexFormatError(f"{path} is incomplete: {e.args[0]} is missing") from None
            weight = getattr(modules.get(name), "weight", None)
            if weight is None or tuple(weight.shape) != (b.shape[0], a.shape[1]):
                have = None if weight is None else tuple(weight.shape)
                raise ModelMismatchError(
                    f"the adapter's layer {name} ({b.shape[0]}x{a.shape[1]}) does not fit the base model "
                    f"(it has {have}): the adapter was trained on another base model"
                )
            delta = (b.to(torch.float32) @ a.to(torch.float32)) * float(scaling)
            weight.copy_((weight.to(torch.float32) + delta.to(weight.device)).to(weight.dtype))
    return model
