"""A small, deterministic, resumable causal-LM fine-tuning loop (full weights or LoRA).

:func:`train_causal_lm` trains a transformers causal LM on :class:`~retrievekit.core.training.examples.TrainingExample`
instances with the loss on trainable spans only: AdamW, linear warmup then cosine/linear/constant decay,
gradient clipping, gradient accumulation, bf16 autocast on CUDA (fp32 master weights), optional gradient
checkpointing and LoRA (peft; merged at the end so the saved model loads with transformers alone).

* **Deterministic.** The data order of epoch ``e`` is a permutation seeded by ``(seed, e)``; the torch RNG is
  re-seeded from ``(seed, step)`` before each optimizer step, so dropout does not depend on history. The loss of an
  optimizer step is the mean over all its loss tokens (summed over micro-batches), so accumulation does not change it.
* **Resumable.** Every ``save_every_steps`` optimizer steps the weights (all of them, or the LoRA adapters), the
  optimizer state (safetensors) and ``trainer_state.json`` (step, fingerprint of the encoded data, config, losses)
  are written atomically into ``output_dir/checkpoint/``. A later call with ``resume=True`` continues from there and
  sees exactly the batches an uninterrupted run would; the learning rate is a pure function of the step.
* **Output.** ``output_dir/model/`` (see :mod:`retrievekit.core.training.manifest`); the checkpoint is removed.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.threads import model_threads
from retrievekit.core.training.adapter import ADAPTER_SUBDIR, lora_tensors
from retrievekit.core.training.checkpoint import (
    _load_checkpoint,
    _save_checkpoint,
    _saved_state,
)
from retrievekit.core.training.config import TrainConfig
from retrievekit.core.training.examples import (
    IGNORE_INDEX,
    TrainingExample,
    collate,
    encode_examples,
    examples_fingerprint,
)
from retrievekit.core.training.manifest import (
    CHECKPOINT_SUBDIR,
    MODEL_SUBDIR,
    ModelManifest,
    save_trained_adapter,
    save_trained_model,
)
from retrievekit.core.training.schedule import _BatchOrder, learning_rate_factor, plan_steps
from retrievekit.core.training.trainee import _finish_model, _prepare_trainee, _Trainee

__all__ = [
    "TrainResult",
    "autocast_dtype",
    "learning_rate_factor",
    "plan_steps",
    "resolve_device",
    "train_causal_lm",
]


@dataclass(frozen=True)
class TrainResult:
    """What a training run did.

    Attributes:
        steps: optimizer steps done in total (including the ones before a resume).
        epochs: passes over the data those steps amount to.
        examples: training instances.
        trained_tokens: non-padding tokens fed forward over all steps.
        loss_tokens: tokens that carried loss over all steps.
        seconds: wall time of this call's training loop (without loading and saving).
        tokens_per_s: non-padding tokens per second in this call.
        final_loss: mean token loss of the last optimizer step.
        loss_history: the loss of every optimizer step, from step 1.
        peak_gpu_memory_bytes: ``torch.cuda.max_memory_allocated`` on CUDA, else None.
        resumed_from_step: the checkpoint step this call started from (0: from scratch).
        device: the torch device trained on.
        precision: ``"bfloat16-autocast"`` or ``"float32"``.
        lora: whether LoRA adapters were trained (and merged).
        planned_steps: the steps the schedule was planned for (more than ``steps`` when ``max_seconds`` ended the
            run early; None: not recorded).

    Examples:
        >>> r = TrainResult(1, 1.0, 2, 10, 4, 0.5, 20.0, 1.5, (1.5,), None, 0, "cpu")
        >>> r.to_dict()["loss_history"], r.precision
        ([1.5], 'float32')
    """

    steps: int
    epochs: float
    examples: int
    trained_tokens: int
    loss_tokens: int
    seconds: float
    tokens_per_s: float
    final_loss: float
    loss_history: tuple[float, ...]
    peak_gpu_memory_bytes: int | None
    resumed_from_step: int
    device: str
    precision: str = "float32"
    lora: bool = False
    planned_steps: int | None = None

    @property
    def stopped_early(self) -> bool:
        """True when the run ended before its planned steps (``TrainConfig.max_seconds``).

        Examples:
            >>> TrainResult(1, 0.5, 2, 10, 4, 0.5, 20.0, 1.5, (1.5,), None, 0, "cpu", planned_steps=2).stopped_early
            True
        """
        return self.planned_steps is not None and self.steps < self.planned_steps

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field.

        Examples:
            >>> TrainResult(1, 1.0, 2, 10, 4, 0.5, 20.0, 1.5, (1.5,), None, 0, "cpu").to_dict()["steps"]
            1
        """
        d = asdict(self)
        d["loss_history"] = list(self.loss_history)
        return d


def resolve_device(config: TrainConfig) -> str:
    """The device to train on: ``config.device``, else ``"cuda"`` when available, else ``"cpu"``.

    Raises:
        InvalidInputError: a CUDA device was asked for but CUDA is not available.

    Examples:
        >>> resolve_device(TrainConfig(device="cpu"))
        'cpu'
    """
    import torch

    device = config.device
    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InvalidInputError(f"device {device!r} was asked for, but CUDA is not available; use device='cpu'")
    return device


def autocast_dtype(config: TrainConfig, device: str) -> Any:
    """The autocast dtype for ``config.dtype`` on ``device`` (None: plain fp32).

    ``"auto"`` is bf16 on CUDA (when the GPU supports it) and fp32 on CPU; ``"bfloat16"`` is bf16 anywhere.

    Examples:
        >>> autocast_dtype(TrainConfig(), "cpu") is None
        True
        >>> str(autocast_dtype(TrainConfig(dtype="bfloat16"), "cpu"))
        'torch.bfloat16'
    """
    import torch

    if config.dtype == "float32":
        return None
    if config.dtype == "bfloat16":
        return torch.bfloat16
    if str(device).startswith("cuda") and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return None


def _pad_id(tokenizer: Any) -> int:
    for attr in ("pad_token_id", "eos_token_id"):
        value = getattr(tokenizer, attr, None)
        if value is not None:
            return int(value)
    return 0


@dataclass(frozen=True)
class _ModelMeta:
    """What the manifest says of the trained model (``settings`` is the caller's mapping, read when used)."""

    kind: str
    base_model: str
    corpus_hash: str | None
    settings: Mapping[str, Any] | None


@dataclass(frozen=True)
class _TrainingRun:
    """What one training call works on: the encoded data, its step counts (:func:`plan_steps`), the device and the
    checkpoint identity."""

    encoded: list[Any]  # EncodedExample
    stats: dict[str, int]
    fingerprint: str
    total_steps: int
    micro_per_epoch: int
    warmup: int
    device: str
    amp_dtype: Any
    out: Path
    identity: dict[str, Any]

    @property
    def ckpt_dir(self) -> Path:
        return self.out / CHECKPOINT_SUBDIR

    @property
    def is_cuda(self) -> bool:
        return str(self.device).startswith("cuda")


@dataclass(frozen=True)
class _Progress:
    """Where the optimizer steps stand: next step, losses so far and token counts (over all calls)."""

    step: int = 0
    history: tuple[float, ...] = ()
    trained_tokens: int = 0
    loss_tokens: int = 0
    session_tokens: int = 0


def _checked_examples(
    config: TrainConfig, kind: str, base_model: str, examples: Sequence[TrainingExample]
) -> list[TrainingExample]:
    """The examples as a list, after checking the arguments of :func:`train_causal_lm`."""
    if not isinstance(config, TrainConfig):
        raise InvalidInputError(f"config must be a TrainConfig, got {type(config).__name__}")
    if not isinstance(kind, str) or not kind:
        raise InvalidInputError("kind must be a non-empty string")
    if not isinstance(base_model, str) or not base_model:
        raise InvalidInputError("base_model must be a non-empty string")
    items = list(examples)
    if not items:
        raise InvalidInputError("no training examples; build some before training")
    return items


def _prepare_run(
    examples: list[TrainingExample],
    tokenizer: Any,
    config: TrainConfig,
    output_dir: str | Path,
    meta: _ModelMeta,
) -> _TrainingRun:
    """Encode the data, count the steps (:func:`plan_steps`), pick the device, and key the run for checkpoints."""
    encoded, stats = encode_examples(examples, tokenizer, max_length=config.max_length)
    fingerprint = examples_fingerprint(encoded)
    total_steps, micro_per_epoch, warmup = plan_steps(len(encoded), config)
    device = resolve_device(config)
    amp_dtype = autocast_dtype(config, device)
    out = Path(output_dir)
    identity = {
        "data_fingerprint": fingerprint,
        "examples": len(encoded),
        "config": config.resume_key(),
        "kind": meta.kind,
        "base_model": meta.base_model,
        "corpus_hash": meta.corpus_hash,
        "settings": dict(meta.settings or {}),
    }
    try:
        json.dumps(identity)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"settings must be JSON-serialisable: {e}") from None
    return _TrainingRun(
        encoded, stats, fingerprint, total_steps, micro_per_epoch, warmup, device, amp_dtype, out, identity
    )


def _resumed_progress(
    run: _TrainingRun, trainee: _Trainee, saved_state: dict[str, Any] | None, *, lora: bool
) -> _Progress:
    """Load the checkpoint (if any) into the model and optimizer; where its steps stand."""
    if saved_state is None:
        return _Progress()
    _load_checkpoint(run.ckpt_dir, trainee.train_model, trainee.optimizer, saved_state, lora=lora)
    start_step = min(int(saved_state["step"]), run.total_steps)
    return _Progress(
        step=start_step,
        history=tuple(float(x) for x in saved_state.get("loss_history", []))[:start_step],
        trained_tokens=int(saved_state.get("trained_tokens", 0)),
        loss_tokens=int(saved_state.get("loss_tokens", 0)),
    )


def _autocast(run: _TrainingRun) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """A factory of the forward pass's autocast context (a null context in fp32)."""
    import torch

    if run.amp_dtype is None:
        return contextlib.nullcontext
    return lambda: torch.autocast(device_type=torch.device(run.device).type, dtype=run.amp_dtype)


def _step_batches(
    run: _TrainingRun, order: _BatchOrder, step: int, grad_accum: int, pad_id: int
) -> list[dict[str, Any]]:
    """The collated micro-batches of optimizer step ``step``."""
    return [
        collate([run.encoded[i] for i in order.micro_batch(m)], pad_id)
        for m in range(step * grad_accum, (step + 1) * grad_accum)
    ]


def _optimizer_step(
    trainee: _Trainee,
    batches: list[dict[str, Any]],
    *,
    lr: float,
    max_grad_norm: float,
    device: str,
    amp: Callable[[], contextlib.AbstractContextManager[Any]],
) -> tuple[float, int, int]:
    """One optimizer step over ``batches``; returns ``(summed token loss, loss tokens, non-padding tokens)``."""
    import torch

    n_loss = int(sum(int((b["labels"][:, 1:] != IGNORE_INDEX).sum()) for b in batches))
    for group in trainee.optimizer.param_groups:
        group["lr"] = lr
    trainee.optimizer.zero_grad(set_to_none=True)
    loss_sum = 0.0
    n_tokens = 0
    for b in batches:
        input_ids = b["input_ids"].to(device)
        mask = b["attention_mask"].to(device)
        labels = b["labels"][:, 1:].to(device)
        with amp():
            logits = trainee.train_model(input_ids=input_ids, attention_mask=mask).logits
        keep = labels != IGNORE_INDEX
        token_logits = logits[:, :-1][keep].float()
        loss = torch.nn.functional.cross_entropy(token_logits, labels[keep], reduction="sum")
        (loss / max(1, n_loss)).backward()
        loss_sum += float(loss.detach())
        n_tokens += int(b["attention_mask"].sum())
    if max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(trainee.params, max_grad_norm)
    trainee.optimizer.step()
    return loss_sum, n_loss, n_tokens


def _after_step(progress: _Progress, loss_sum: float, n_loss: int, n_tokens: int) -> _Progress:
    """The progress once the step ``progress.step`` is done."""
    return _Progress(
        step=progress.step + 1,
        history=(*progress.history, loss_sum / max(1, n_loss)),
        trained_tokens=progress.trained_tokens + n_tokens,
        loss_tokens=progress.loss_tokens + n_loss,
        session_tokens=progress.session_tokens + n_tokens,
    )


def _checkpoint_state(run: _TrainingRun, progress: _Progress) -> dict[str, Any]:
    """The ``trainer_state.json`` content at ``progress``."""
    return {
        "identity": run.identity,
        "step": progress.step,
        "total_steps": run.total_steps,
        "loss_history": list(progress.history),
        "trained_tokens": progress.trained_tokens,
        "loss_tokens": progress.loss_tokens,
    }


def _train_steps(
    run: _TrainingRun,
    config: TrainConfig,
    trainee: _Trainee,
    pad_id: int,
    progress: _Progress,
    bar: Any,
    on_step: Callable[[int, float], None] | None,
) -> _Progress:
    """Run the optimizer steps from ``progress.step`` to the end, checkpointing on the way."""
    import torch

    order = _BatchOrder(len(run.encoded), config.batch_size, config.seed)
    amp = _autocast(run)
    deadline = None if config.max_seconds is None else time.perf_counter() + config.max_seconds
    for step in range(progress.step, run.total_steps):
        torch.manual_seed(config.seed * 1_000_003 + step)
        batches = _step_batches(run, order, step, config.grad_accum, pad_id)
        lr = config.learning_rate * learning_rate_factor(step, run.total_steps, run.warmup, config.scheduler)
        sums = _optimizer_step(trainee, batches, lr=lr, max_grad_norm=config.max_grad_norm, device=run.device, amp=amp)
        progress = _after_step(progress, *sums)
        step_loss, done = progress.history[-1], progress.step
        bar.update(1)
        bar.set_postfix(loss=f"{step_loss:.4f}", refresh=False)
        if config.save_every_steps and done % config.save_every_steps == 0 and done < run.total_steps:
            state = _checkpoint_state(run, progress)
            _save_checkpoint(run.ckpt_dir, trainee.train_model, trainee.optimizer, state, lora=config.lora)
        if on_step is not None:
            on_step(done, step_loss)
        if deadline is not None and time.perf_counter() >= deadline:
            break  # max_seconds: end here; the caller saves the model as after the last step
    return progress


def _run_training(
    run: _TrainingRun,
    config: TrainConfig,
    trainee: _Trainee,
    start: _Progress,
    pad_id: int,
    on_step: Callable[[int, float], None] | None,
    *,
    show: bool,
    desc: str,
) -> tuple[_Progress, float]:
    """The training loop under a progress bar; returns where it ended and its wall time.

    On any exception the LoRA adapters are removed and the model is put in eval mode before re-raising.
    """
    from tqdm.auto import tqdm

    bar = tqdm(total=run.total_steps, initial=start.step, desc=desc, disable=not show, unit="step")
    t0 = time.perf_counter()
    trainee.train_model.train()
    try:
        with model_threads():
            end = _train_steps(run, config, trainee, pad_id, start, bar, on_step)
    except BaseException:
        bar.close()
        if trainee.peft_model is not None:
            trainee.peft_model.unload()  # give the caller its base model back, without half-trained adapters
        trainee.model.eval()
        raise
    bar.close()
    return end, time.perf_counter() - t0


def _train_result(
    run: _TrainingRun, config: TrainConfig, start_step: int, progress: _Progress, seconds: float
) -> TrainResult:
    """The :class:`TrainResult` of a finished run (reads the CUDA peak memory now)."""
    import torch

    history = progress.history
    return TrainResult(
        steps=progress.step,
        epochs=round(progress.step * config.grad_accum / run.micro_per_epoch, 4),
        examples=len(run.encoded),
        trained_tokens=progress.trained_tokens,
        loss_tokens=progress.loss_tokens,
        seconds=round(seconds, 3),
        tokens_per_s=round(progress.session_tokens / seconds, 1) if seconds > 0 else 0.0,
        final_loss=history[-1] if history else float("nan"),
        loss_history=history,
        peak_gpu_memory_bytes=int(torch.cuda.max_memory_allocated(run.device)) if run.is_cuda else None,
        resumed_from_step=start_step,
        device=str(run.device),
        precision="bfloat16-autocast" if run.amp_dtype is not None else "float32",
        lora=config.lora,
        planned_steps=run.total_steps,
    )


def _save_output(
    model: Any,
    tokenizer: Any,
    run: _TrainingRun,
    config: TrainConfig,
    result: TrainResult,
    meta: _ModelMeta,
    adapter: dict[str, Any] | None = None,
) -> None:
    """Save the model with its manifest to ``output_dir/model/`` (and a LoRA run's adapter alone to
    ``output_dir/adapter/``, same manifest) and remove the checkpoint."""
    manifest = ModelManifest.new(
        kind=meta.kind,
        base_model=meta.base_model,
        corpus_hash=meta.corpus_hash,
        settings=meta.settings,
        train={
            "config": config.to_dict(),
            "result": result.to_dict(),
            "data": {**run.stats, "fingerprint": run.fingerprint},
        },
    )
    save_trained_model(model, tokenizer, run.out / MODEL_SUBDIR, manifest)
    if adapter is not None:
        save_trained_adapter(adapter, run.out / ADAPTER_SUBDIR, manifest)
    shutil.rmtree(run.ckpt_dir, ignore_errors=True)


def train_causal_lm(
    model: Any,
    tokenizer: Any,
    examples: Sequence[TrainingExample],
    config: TrainConfig,
    output_dir: str | Path,
    *,
    kind: str,
    base_model: str,
    corpus_hash: str | None = None,
    settings: Mapping[str, Any] | None = None,
    resume: bool = True,
    progress: bool = True,
    on_step: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Fine-tune ``model`` in place on ``examples``; save it to ``output_dir/model/`` with a manifest.

    Args:
        model: a transformers causal LM (GGUF-loaded models are fine). It is trained in place (cast to fp32),
            LoRA adapters are merged into it, and it is left in eval mode on the training device.
        tokenizer: its tokenizer.
        examples: the training instances.
        config: the settings (:class:`TrainConfig`).
        output_dir: folder of the checkpoint (``checkpoint/``) and the final model (``model/``).
        kind: the model's use, stored in the manifest (``"self-retrieval"``, ``"judge"``...).
        base_model: the base model's registry name or a label, stored in the manifest.
        corpus_hash: fingerprint of the corpus the model internalises (None: not corpus-specific).
        settings: method settings stored in the manifest (checked again at load time).
        resume: continue from a matching checkpoint in ``output_dir``; False discards any checkpoint.
        progress: show a tqdm progress bar.
        on_step: called as ``on_step(step, loss)`` after every optimizer step (after its checkpoint, if any).

    Raises:
        InvalidInputError: no examples, an example without trainable tokens, or a checkpoint in ``output_dir`` of
            other data or settings while ``resume=True``.
        MissingDependencyError: ``lora=True`` without peft installed.

    Examples:
        >>> import tempfile
        >>> from retrievekit.core.llm.models import load_model_and_tokenizer
        >>> from retrievekit.core.training import Segment, TrainingExample
        >>> exs = [TrainingExample((Segment("Question: what thins blood?\\n Title: "), Segment("aspirin", True)))]
        >>> train_causal_lm(*load_model_and_tokenizer(DEFAULT_MODEL), exs, TrainConfig(max_steps=3, learning_rate=1e-3),
        ...                 tempfile.mkdtemp(), kind="self-retrieval", base_model=DEFAULT_MODEL, progress=False).steps  # doctest: +SKIP
        3
    """
    import torch

    examples = _checked_examples(config, kind, base_model, examples)
    meta = _ModelMeta(kind, base_model, corpus_hash, settings)
    run = _prepare_run(examples, tokenizer, config, output_dir, meta)
    saved_state = _saved_state(run.ckpt_dir, run.identity, resume=resume)
    trainee = _prepare_trainee(model, config, run.device)
    start = _resumed_progress(run, trainee, saved_state, lora=config.lora)
    pad_id = _pad_id(tokenizer)
    if run.is_cuda:
        torch.cuda.reset_peak_memory_stats(run.device)
    end, seconds = _run_training(run, config, trainee, start, pad_id, on_step, show=progress, desc=f"train {kind}")
    adapter = lora_tensors(trainee.peft_model) if trainee.peft_model is not None else None
    model = _finish_model(trainee, config)
    result = _train_result(run, config, start.step, end, seconds)
    _save_output(model, tokenizer, run, config, result, meta, adapter)
    return result


# The public home of these names stays this module (docs, the demo corpus's ids, pickles), as before the split.
for _public in (learning_rate_factor, plan_steps):
    _public.__module__ = __name__
del _public
