"""Resumable training checkpoints: weights (all, or the LoRA adapters), optimizer state and ``trainer_state.json``,
written atomically, and checked against the run that reads them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from retrievekit.core.descriptors import check_descriptors
from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.store import atomic_folder, read_manifest, write_manifest
from retrievekit.core.storage import atomic_write_text

__all__: list[str] = []

CHECKPOINT_FORMAT = "training-checkpoint"
CHECKPOINT_VERSION = 1
_STATE = "trainer_state.json"
_WEIGHTS = "weights.safetensors"
_OPTIMIZER = "optimizer.safetensors"


def _save_checkpoint(folder: Path, model: Any, optimizer: Any, state: dict[str, Any], *, lora: bool) -> None:
    from safetensors.torch import save_file, save_model

    opt = optimizer.state_dict()
    tensors: dict[str, Any] = {}
    for idx, pstate in opt["state"].items():
        for key, value in pstate.items():
            tensors[f"state.{idx}.{key}"] = value.detach().cpu().contiguous()
    groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in opt["param_groups"]]
    with atomic_folder(folder) as tmp:
        if lora:
            trainable = {n: p.detach().cpu().contiguous() for n, p in model.named_parameters() if p.requires_grad}
            save_file(trainable, str(tmp / _WEIGHTS))
        else:
            save_model(model, str(tmp / _WEIGHTS))
        save_file(tensors, str(tmp / _OPTIMIZER))
        atomic_write_text(tmp / _STATE, json.dumps({**state, "optimizer_param_groups": groups}, sort_keys=True))
        write_manifest(tmp, CHECKPOINT_FORMAT, CHECKPOINT_VERSION, {"step": state["step"]})


def _read_checkpoint_state(folder: Path) -> dict[str, Any]:
    read_manifest(folder, CHECKPOINT_FORMAT, CHECKPOINT_VERSION)
    try:
        state = json.loads((folder / _STATE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        # out of file descriptors: not a corrupt checkpoint
        check_descriptors(f"reading {folder / _STATE}", e, by_count=False)
        raise IndexFormatError(f"training checkpoint {folder} is corrupt: {e}") from e
    if not isinstance(state, dict) or not isinstance(state.get("step"), int):
        raise IndexFormatError(f"training checkpoint {folder} is corrupt: no step in {_STATE}")
    return state


def _load_checkpoint(folder: Path, model: Any, optimizer: Any, state: dict[str, Any], *, lora: bool) -> None:
    from safetensors.torch import load_file, load_model

    if lora:
        weights = load_file(str(folder / _WEIGHTS))
        params = dict(model.named_parameters())
        missing = sorted(set(n for n, p in params.items() if p.requires_grad) - set(weights))
        if missing:
            raise IndexFormatError(f"training checkpoint {folder} lacks LoRA weights {missing[:3]}")
        import torch

        with torch.no_grad():
            for name, value in weights.items():
                params[name].copy_(value.to(params[name].device))
    else:
        load_model(model, str(folder / _WEIGHTS), strict=True)
    raw = load_file(str(folder / _OPTIMIZER))
    opt_state: dict[int, dict[str, Any]] = {}
    for key, value in raw.items():
        _, idx, name = key.split(".", 2)
        opt_state.setdefault(int(idx), {})[name] = value
    groups = state["optimizer_param_groups"]
    for g in groups:
        if isinstance(g.get("betas"), list):
            g["betas"] = tuple(g["betas"])
    optimizer.load_state_dict({"state": opt_state, "param_groups": groups})


def _diff(saved: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    keys = sorted(set(saved) | set(now))
    return [f"{k}: {saved.get(k)!r} -> {now.get(k)!r}" for k in keys if saved.get(k) != now.get(k)]


def _saved_state(ckpt_dir: Path, identity: Mapping[str, Any], *, resume: bool) -> dict[str, Any] | None:
    """The state of the checkpoint to resume from (None: start over; ``resume=False`` removes any checkpoint)."""
    if not resume and ckpt_dir.exists():
        shutil.rmtree(ckpt_dir)
    if not (resume and ckpt_dir.exists()):
        return None
    saved_state = _read_checkpoint_state(ckpt_dir)
    differences = _diff(saved_state.get("identity", {}), identity)
    if differences:
        raise InvalidInputError(
            f"{ckpt_dir} holds a checkpoint of other training data or settings ({'; '.join(differences[:4])}); "
            "pass resume=False to start over, or use another output_dir"
        )
    return saved_state
