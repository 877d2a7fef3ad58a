"""The relevance judge: a causal LM read as a calibrated pointwise yes/no scorer.

:class:`Judge` implements :class:`~retrievekit.core.llm.protocol.RelevanceJudge` (``score_relevance``: numbered
candidates in, probabilities out, batched) and :class:`~retrievekit.core.llm.protocol.ChatLLM` (``complete`` /
``complete_json`` go to :meth:`Judge.chat_model`, a :class:`~retrievekit.core.llm.local.LocalLM`), so it is accepted
wherever a method takes ``llm=``. Free text (ARM's keywords, a LATTICE tree's summaries) comes from the model the
judge starts from, not from weights tuned to answer yes or no: a trained judge loaded by its manifest's registry name
loads that base model, untouched, on its first free-text request; a zero-shot judge is its base model already. Only a
judge merged into a model handed over in code (``Judge.load(..., base=(model, tokenizer))``) writes with its own
weights, as there is no base left to load.

Score of a pair: ``p = sigmoid(a * m + b)`` with the margin ``m = logit(yes) - logit(no)`` of the next token after
the prompt (:mod:`retrievekit.core.judge.prompt`) and Platt parameters ``(a, b)`` fitted on held-out training pairs
(:func:`fit_platt`), stored in the manifest; a zero-shot judge uses ``(1, 0)``. Only the hidden state of the last
prompt token is multiplied by the answer rows of the output embedding (no full-vocabulary logits), in right-padded
batches sorted by length, under ``torch.no_grad`` in eval mode: deterministic for fixed weights.

Examples:
    >>> import numpy as np
    >>> a, b = fit_platt(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([0, 0, 1, 1]), l2=1.0)
    >>> a > 0
    True
    >>> round(float(sigmoid(np.array([0.0]))[0]), 2)
    0.5
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_query
from retrievekit.core.errors import IndexFormatError, InvalidInputError, ModelMismatchError
from retrievekit.core.judge.prompt import CHAT_TEMPLATE_ID, PLAIN_TEMPLATE_ID, TEMPLATES, JudgePrompt
from retrievekit.core.judge.score_memo import judge_identity, memoized_scores
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.llm.protocol import Completion, JsonResult, JsonSchemaLike, Prompt
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.threads import model_threads
from retrievekit.core.trace import Trace
from retrievekit.core.types import ensure_text

__all__ = ["JUDGE_KIND", "Judge", "fit_platt", "load_judge", "sigmoid"]

JUDGE_KIND = "judge"
_BASE_LOCK = threading.Lock()


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function.

    Examples:
        >>> sigmoid(np.array([-1000.0, 0.0, 1000.0])).tolist()
        [0.0, 0.5, 1.0]
    """
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def fit_platt(
    margins: np.ndarray,
    labels: np.ndarray,
    *,
    l2: float = 1e-3,
    iters: int = 100,
    smooth: bool = True,
    min_slope: float | None = None,
) -> tuple[float, float]:
    """Platt scaling: ``(a, b)`` minimising the log-loss of ``sigmoid(a * margin + b)`` (Newton, tiny L2 on ``a, b``).

    With ``smooth`` the targets are Platt's (1999) ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)`` instead of 1 and 0,
    so a small, perfectly separated holdout still gives finite, moderate parameters. With ``min_slope`` set and a
    fitted ``a`` below it, ``a`` is fixed at ``min_slope`` and only ``b`` is refitted (a calibration must not reverse
    the judge's ranking). Deterministic; needs both classes (``InvalidInputError`` otherwise).

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=4000)
        >>> y = (rng.random(4000) < sigmoid(2.0 * x - 0.5)).astype(int)
        >>> a, b = fit_platt(x, y)
        >>> round(a, 1), round(b, 1)
        (2.0, -0.5)
        >>> fit_platt(np.array([1.0, 2.0, -1.0]), np.array([0, 0, 1]), min_slope=0.01)[0]
        0.01
    """
    x = np.asarray(margins, dtype=np.float64).ravel()
    y = np.asarray(labels, dtype=np.float64).ravel()
    if x.shape != y.shape or x.size == 0:
        raise InvalidInputError("fit_platt needs as many labels as margins (and at least one)")
    if not (np.any(y > 0.5) and np.any(y < 0.5)):
        raise InvalidInputError("fit_platt needs both relevant and non-relevant examples")
    if not np.all(np.isfinite(x)):
        raise InvalidInputError("fit_platt got non-finite margins")
    if smooth:
        n_pos, n_neg = float(np.sum(y > 0.5)), float(np.sum(y < 0.5))
        y = np.where(y > 0.5, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    X = np.stack([x, np.ones_like(x)], axis=1)

    def loss(w: np.ndarray) -> float:
        z = X @ w
        # log(1 + e^z) - y z, stably; plus the L2 term
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * float(w @ w))

    w = np.array([1.0, 0.0])
    current = loss(w)
    for _ in range(iters):
        p = sigmoid(X @ w)
        grad = X.T @ (p - y) + l2 * w
        hess = (X * (p * (1 - p))[:, None]).T @ X + l2 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-8:  # damped Newton: halve the step until the loss does not rise
            cand = w - t * step
            new = loss(cand)
            if new <= current + 1e-12:
                break
            t *= 0.5
        else:
            break
        w, moved, current = cand, float(np.max(np.abs(t * step))), new
        if moved < 1e-10:
            break
    if min_slope is not None and w[0] < min_slope:
        a = float(min_slope)
        b = 0.0
        for _ in range(iters):  # 1-D Newton on b with a fixed
            p = sigmoid(a * x + b)
            g = float(np.sum(p - y)) + l2 * b
            h = float(np.sum(p * (1 - p))) + l2
            b -= g / h
            if abs(g / h) < 1e-10:
                break
        return a, float(b)
    return float(w[0]), float(w[1])


def _torch() -> Any:
    import torch

    return torch


class Judge(ChatLLMBase):
    """A causal LM read as a calibrated relevance judge (also a chat LLM through its base model).

    Args:
        model: a transformers causal LM (left in eval mode).
        tokenizer: its tokenizer.
        prompt: the :class:`JudgePrompt` (plain template for trained judges, chat template for zero-shot).
        platt: ``(a, b)`` of ``p = sigmoid(a * margin + b)``.
        batch_size: pairs per forward pass.
        name: label for ``repr`` and traces.
        base_model: registry name (or label) of the base model, as in the manifest.
        manifest: the trained model's manifest (None for a zero-shot judge).
        load_base: called once, on the first free-text request, for the model that answers it (default: a
            ``LocalLM`` around ``model`` itself).
        free_text_model: registry name of that model when it is the judge's untuned base (so a keyword cache
            keyed by model name is shared with runs of the base model); None when it is the judge's own weights.

    Examples:
        >>> Judge.zero_shot().score_relevance("aspirin pain", ["Aspirin relieves pain.", "Rome is old."])  # doctest: +SKIP
        [0.49..., 0.34...]
    """

    thread_safe = False
    """One torch model shared by every call: LATTICE and the build helpers run its calls one at a time."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        prompt: JudgePrompt | None = None,
        platt: tuple[float, float] = (1.0, 0.0),
        batch_size: int = 32,
        name: str | None = None,
        base_model: str | None = None,
        manifest: Any = None,
        load_base: Callable[[], Any] | None = None,
        free_text_model: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise InvalidInputError(f"batch_size must be >= 1, got {batch_size}")
        a, b = float(platt[0]), float(platt[1])
        if not (np.isfinite(a) and np.isfinite(b)):
            raise InvalidInputError(f"Platt parameters must be finite, got {platt!r}")
        self.model = model
        self.model.eval()
        self.tokenizer = tokenizer
        self.prompt = prompt or JudgePrompt()
        self.platt = (a, b)
        self.batch_size = int(batch_size)
        self.base_model = base_model
        self.name = name or base_model or type(model).__name__
        self.manifest = manifest
        self._yes, self._no = self.prompt.readout_ids(tokenizer)
        pad = getattr(tokenizer, "pad_token_id", None)
        if pad is None:
            pad = getattr(tokenizer, "eos_token_id", None)
        self._pad = int(pad) if pad is not None else 0
        self._lm: Any = None
        self._load_base = load_base
        self.free_text_model = free_text_model

    # ------------------------------------------------------------------ construction
    @classmethod
    def zero_shot(
        cls,
        llm: Any = DEFAULT_MODEL,
        *,
        device: str | None = None,
        batch_size: int = 32,
        max_passage_tokens: int = 256,
    ) -> Judge:
        """A judge from an untrained chat model, with the chat template: ``llm`` is a loaded ``LocalLM`` or a model's
        name in the registry (default :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`), loaded on ``device``.
        """
        from retrievekit.core.llm.local import LocalLM

        lm = resolve_llm(llm, device=device) if isinstance(llm, str) or llm is None else llm
        if not isinstance(lm, LocalLM):
            raise InvalidInputError(
                f"a zero-shot judge reads a local model's logits: llm must be a LocalLM, got {type(lm).__name__}"
            )
        judge = cls(
            lm.model,
            lm.tokenizer,
            prompt=JudgePrompt(template_id=CHAT_TEMPLATE_ID, max_passage_tokens=max_passage_tokens),
            batch_size=batch_size,
            name=f"{lm.name} (zero-shot)",
            base_model=lm.name,
        )
        judge._lm = lm
        judge.free_text_model = lm.name
        return judge

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        llm: str | None = None,
        device: str | None = None,
        batch_size: int = 32,
        dtype: Any = None,
        base: tuple[Any, Any] | None = None,
    ) -> Judge:
        """Load a trained judge (see :func:`load_judge`); ``base`` is the ``(model, tokenizer)`` an adapter folder
        is merged into (default: the registry model its manifest names, which also answers free text)."""
        from retrievekit.core.llm.local import LocalLM
        from retrievekit.core.training import load_trained_model

        model, tokenizer, manifest = load_trained_model(
            path, kind=JUDGE_KIND, base_model=llm, device=device, dtype=dtype, base=base
        )
        settings = dict(manifest.settings)
        template = settings.get("template_id")
        if template not in TEMPLATES:
            raise ModelMismatchError(
                f"judge at {path} uses prompt template {template!r}; this version knows {TEMPLATES}"
            )
        try:
            prompt = JudgePrompt(
                template_id=str(template),
                max_passage_tokens=int(settings.get("max_passage_tokens", 256)),
                max_query_tokens=int(settings.get("max_query_tokens", 64)),
            )
            platt = (float(settings.get("platt_a", 1.0)), float(settings.get("platt_b", 0.0)))
        except (TypeError, ValueError) as e:
            raise IndexFormatError(f"judge manifest at {path} has malformed settings: {e}") from None
        return cls(
            model,
            tokenizer,
            prompt=prompt,
            platt=platt,
            batch_size=batch_size,
            name=f"{manifest.base_model} (judge)",
            base_model=manifest.base_model,
            manifest=manifest,
            load_base=None if base is not None else (lambda: LocalLM.load(manifest.base_model, device=device)),
            free_text_model=None if base is not None else manifest.base_model,
        )

    def __repr__(self) -> str:
        a, b = self.platt
        return f"Judge({self.name!r}, template={self.prompt.template_id!r}, platt=({a:.3f}, {b:.3f}))"

    @property
    def device(self) -> Any:
        """The torch device of the model's parameters."""
        return next(self.model.parameters()).device

    @property
    def trained(self) -> bool:
        """Whether this judge uses the fine-tuning template (a trained judge) rather than the chat prompt."""
        return self.prompt.template_id == PLAIN_TEMPLATE_ID

    # ------------------------------------------------------------------ scoring
    def _forward_margins(self, rows: list[list[int]]) -> np.ndarray:
        """Margins of right-padded rows (one forward pass)."""
        torch = _torch()
        width = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            input_ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1
        last = torch.tensor([len(r) - 1 for r in rows], dtype=torch.long)
        dev = self.device
        input_ids, mask, last = input_ids.to(dev), mask.to(dev), last.to(dev)
        rows_idx = torch.arange(len(rows), device=dev)
        out_emb = self.model.get_output_embeddings()
        decoder = self.model.get_decoder() if hasattr(self.model, "get_decoder") else None
        with torch.no_grad(), model_threads():
            if decoder is not None and out_emb is not None:
                hidden = decoder(input_ids=input_ids, attention_mask=mask).last_hidden_state
                h = hidden[rows_idx, last].float()
                ids = torch.tensor(self._yes + self._no, dtype=torch.long, device=dev)
                logits = h @ out_emb.weight[ids].float().T
                bias = getattr(out_emb, "bias", None)
                if bias is not None:
                    logits = logits + bias[ids].float()
            else:  # pragma: no cover - models without a separable decoder
                full = self.model(input_ids=input_ids, attention_mask=mask).logits
                ids = torch.tensor(self._yes + self._no, dtype=torch.long, device=dev)
                logits = full[rows_idx, last][:, ids].float()
            ny = len(self._yes)
            margin = torch.logsumexp(logits[:, :ny], dim=1) - torch.logsumexp(logits[:, ny:], dim=1)
        return np.asarray(margin.cpu().numpy(), dtype=np.float64)

    def margins(self, pairs: Sequence[tuple[str, str]], *, trace: Trace | None = None) -> np.ndarray:
        """Raw margins ``logit(yes) - logit(no)`` of ``(query, passage)`` pairs, in input order (batched)."""
        encoded = [self.prompt.encode(q, p, self.tokenizer) for q, p in pairs]
        limit = getattr(getattr(self.model, "config", None), "max_position_embeddings", None)
        for ids in encoded:
            if not ids:
                raise InvalidInputError("a judge prompt encoded to no tokens")
            if limit is not None and len(ids) > int(limit):
                raise InvalidInputError(
                    f"judge prompt of {len(ids)} tokens exceeds the model context ({limit}); lower max_passage_tokens"
                )
        order = sorted(range(len(encoded)), key=lambda i: (len(encoded[i]), i))
        out = np.zeros(len(encoded), dtype=np.float64)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            rows = [encoded[i] for i in chunk]
            out[chunk] = self._forward_margins(rows)
            if trace is not None:
                trace.record_llm_call(prompt_tokens=sum(len(r) for r in rows), completion_tokens=0)
                trace.count("judge.pairs", len(rows))
        return out

    def calibrate(self, margins: np.ndarray) -> np.ndarray:
        """Probabilities ``sigmoid(a * margin + b)`` with this judge's Platt parameters."""
        a, b = self.platt
        return sigmoid(a * np.asarray(margins, dtype=np.float64) + b)

    def score_pairs(self, pairs: Sequence[tuple[str, str]], *, trace: Trace | None = None) -> list[float]:
        """Calibrated P(relevant) for many ``(query, passage)`` pairs (several queries at once), in input order."""
        checked = []
        for q, p in pairs:
            checked.append((check_query(q), ensure_text(p, field_name="candidate")))
        if not checked:
            return []

        def compute(t: Trace | None) -> list[float]:
            return [float(x) for x in self.calibrate(self.margins(checked, trace=t))]

        return memoized_scores(lambda: judge_identity(self), checked, compute, trace=trace)  # the memo, when set

    def score_relevance(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
        """P(relevant) in [0, 1] for each candidate, in input order (``[]`` for no candidates).

        Raises ``EmptyQueryError`` for an empty query.
        """
        q = check_query(query)
        if isinstance(candidates, str):
            raise InvalidInputError("candidates must be a sequence of texts, not one string")
        return self.score_pairs([(q, c) for c in candidates], trace=trace)

    # ------------------------------------------------------------------ chat delegation
    @property
    def lm(self) -> Any:
        """The :class:`~retrievekit.core.llm.local.LocalLM` that answers free text (see :meth:`chat_model`)."""
        with _BASE_LOCK:  # methods score from several threads; the base model loads once
            if self._lm is None:
                if self._load_base is not None:
                    self._lm = self._load_base()
                else:
                    from retrievekit.core.llm.local import LocalLM

                    self._lm = LocalLM(self.model, self.tokenizer, name=self.name)
        return self._lm

    def chat_model(self) -> Any:
        """The model that answers ``complete`` / ``complete_json``: the base model the judge starts from (loaded on
        first use for a trained judge), or a ``LocalLM`` around the judge's own weights when no base is known.

        Examples:
            >>> load_judge("judges/smollm2-scifact").chat_model().name == DEFAULT_MODEL  # its untuned base  # doctest: +SKIP
            True
        """
        return self.lm

    def _reply(self, prompt: Prompt, max_tokens: int, temperature: float, trace: Trace | None) -> Completion:
        """Free-text reply from the underlying model (summaries etc.), as ``LocalLM.complete``."""
        result: Completion = self.lm.complete(prompt, max_tokens=max_tokens, temperature=temperature, trace=trace)
        return result

    def _json(
        self, prompt: Prompt, schema: JsonSchemaLike, max_tokens: int, trace: Trace | None, retries: int
    ) -> JsonResult:
        """Schema-constrained JSON from the underlying model, as ``LocalLM.complete_json``."""
        result: JsonResult = self.lm.complete_json(prompt, schema, max_tokens=max_tokens, trace=trace, retries=retries)
        return result


def load_judge(
    path: str | Path,
    *,
    llm: str | None = None,
    device: str | None = None,
    batch_size: int = 32,
) -> Judge:
    """Load a trained judge folder: the ``output_dir`` of ``train-judge``, its ``model/`` folder, or the LoRA
    adapter alone (``adapter/`` of a LoRA run, a few MB: merged at load time into the registry base model its manifest
    names, e.g. ``judges/smollm2-scifact``).

    The manifest must say ``kind == "judge"``; with ``llm`` given it must also match the base model the judge
    was trained from (``ModelMismatchError`` otherwise, naming both values). An unknown prompt template is refused too.

    Examples:
        >>> load_judge("runs/judge-scifact", llm=DEFAULT_MODEL).trained  # a train-judge output  # doctest: +SKIP
        True
        >>> import tempfile
        >>> load_judge(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... holds no trained retrievekit model (no retrievekit_model.json)
    """
    return Judge.load(path, llm=llm, device=device, batch_size=batch_size)
