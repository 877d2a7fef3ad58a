"""Fine-tune a causal LM into a pointwise yes/no relevance judge, then calibrate it (Platt) on held-out pairs.

:func:`train_judge` builds one :class:`~retrievekit.core.training.TrainingExample` per pair -- the prompt
(:data:`~retrievekit.core.judge.prompt.PLAIN_TEMPLATE`, not trainable) followed by the answer ``" yes"`` or
``" no"`` (trainable, no EOS) -- upsamples the minority class when the labels are skewed, trains with the shared
trainer (:func:`~retrievekit.core.training.train_causal_lm`: full or LoRA, resumable checkpoints, manifest of kind
``"judge"``), and fits ``p = sigmoid(a * margin + b)`` on a held-out share of the *queries* (their pairs never
train). ``a, b``, the template id and the truncation settings go into the manifest's ``settings``; the holdout's
ROC AUC before and after training is reported.

Examples:
    >>> roc_auc([0.9, 0.8, 0.3, 0.1], [1, 0, 1, 0])
    0.75
    >>> split_by_query([JudgePair("q", "p", 1, f"q{i}", "d") for i in range(10)], holdout=0.2, seed=0)[1][0].query_id
    'q4'
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.judge.data import JudgePair
from retrievekit.core.judge.prompt import ANSWER_NO, ANSWER_YES, PLAIN_TEMPLATE_ID, JudgePrompt
from retrievekit.core.judge.scorer import JUDGE_KIND, Judge, fit_platt
from retrievekit.core.llm.models import DEFAULT_MODEL

__all__ = ["MIN_PLATT_SLOPE", "JudgeTrainResult", "build_examples", "roc_auc", "split_by_query", "train_judge"]

MIN_PLATT_SLOPE = 1e-2
"""Smallest Platt slope kept: a calibration never reverses the judge's ranking (a ``UserWarning`` says so)."""


def roc_auc(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> float:
    """ROC AUC (Mann-Whitney, ties count half); ``nan`` when one class is missing.

    Examples:
        >>> roc_auc([1.0, 1.0], [1, 0]), roc_auc([0.2, 0.7], [0, 1])
        (0.5, 1.0)
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    pos, neg = s[y == 1], s[y == 0]
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (pos.size * neg.size))


def split_by_query(
    pairs: Sequence[JudgePair], *, holdout: float = 0.1, seed: int = 0
) -> tuple[list[JudgePair], list[JudgePair]]:
    """``(train, held_out)``: a seeded share ``holdout`` of the query ids (at least one when > 0) and all their pairs.

    Examples:
        >>> tr, ho = split_by_query([JudgePair("q", "p", 1, "a", "d"), JudgePair("q", "p", 1, "b", "d")], holdout=0.5)
        >>> len(tr), len(ho)
        (1, 1)
    """
    if not 0.0 <= holdout < 1.0:
        raise InvalidInputError(f"holdout must be in [0, 1), got {holdout}")
    qids = sorted({p.query_id for p in pairs})
    n_hold = 0 if holdout == 0 or len(qids) < 2 else max(1, round(holdout * len(qids)))
    perm = np.random.default_rng(seed).permutation(len(qids))
    held = {qids[i] for i in perm[:n_hold].tolist()}
    return [p for p in pairs if p.query_id not in held], [p for p in pairs if p.query_id in held]


def build_examples(
    pairs: Sequence[JudgePair], tokenizer: Any, prompt: JudgePrompt, *, balance: bool = True
) -> tuple[list[Any], dict[str, Any]]:
    """Training examples (prompt + trainable answer, no EOS) and counts; the minority class is repeated when
    ``balance`` and the classes differ by more than 1.5x (``round(majority / minority)`` copies in all).

    Examples:
        >>> from retrievekit.core.fakes import CharTokenizer as Chars
        >>> pairs = [JudgePair("q", "p", 1, "q", "a")] + [JudgePair("q", "p", 0, "q", str(i)) for i in range(3)]
        >>> ex, stats = build_examples(pairs, Chars(), JudgePrompt())
        >>> stats["examples"], stats["repeat_positive"], ex[0].segments[1].text
        (6, 3, ' yes')
    """
    from retrievekit.core.training import Segment, TrainingExample

    pos = [p for p in pairs if p.label == 1]
    neg = [p for p in pairs if p.label == 0]
    rep_pos = rep_neg = 1
    if balance and pos and neg:
        if len(neg) > 1.5 * len(pos):
            rep_pos = round(len(neg) / len(pos))
        elif len(pos) > 1.5 * len(neg):
            rep_neg = round(len(pos) / len(neg))
    examples = []
    for p in pairs:
        text = prompt.render(p.query, p.passage, tokenizer)
        answer = ANSWER_YES if p.label == 1 else ANSWER_NO
        ex = TrainingExample(
            (Segment(text, False), Segment(answer, True)),
            kind="judge-yes" if p.label == 1 else "judge-no",
            add_eos=False,
        )
        examples.extend([ex] * (rep_pos if p.label == 1 else rep_neg))
    stats: dict[str, Any] = {
        "pairs": len(pairs),
        "positives": len(pos),
        "negatives": len(neg),
        "repeat_positive": rep_pos,
        "repeat_negative": rep_neg,
        "examples": len(examples),
    }
    return examples, stats


@dataclass(frozen=True)
class JudgeTrainResult:
    """What :func:`train_judge` did.

    Attributes:
        model_dir: the saved judge (load it with :func:`~retrievekit.core.judge.load_judge`).
        platt: fitted ``(a, b)``.
        data: pair/example counts (train side) and the holdout size.
        holdout_auc_before: ROC AUC of the untrained model's margins on the holdout (plain template).
        holdout_auc_after: the same after training.
        train: the shared trainer's ``TrainResult.to_dict()``.
        seconds: wall time of the whole call (encoding, training, calibration).

    Examples:
        >>> r = JudgeTrainResult(Path("x"), (1.0, 0.0), {}, 0.5, 0.9, {}, 1.0)
        >>> r.to_dict()["holdout_auc_after"]
        0.9
    """

    model_dir: Path
    platt: tuple[float, float]
    data: dict[str, Any]
    holdout_auc_before: float | None
    holdout_auc_after: float | None
    train: dict[str, Any]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict.

        Examples:
            >>> JudgeTrainResult(Path("x"), (1.0, 0.0), {}, None, None, {}, 1.0).to_dict()["model_dir"]
            'x'
        """
        d = asdict(self)
        d["model_dir"] = str(self.model_dir)
        d["platt"] = list(self.platt)
        return d


def _nan_to_none(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def _checked_pairs(pairs: Sequence[JudgePair]) -> list[JudgePair]:
    """The pairs as a list; both labels must occur."""
    items = list(pairs)
    labels = {p.label for p in items}
    if labels != {0, 1}:
        raise InvalidInputError(
            "train_judge needs both relevant (label 1) and non-relevant (label 0) pairs; mine negatives first"
        )
    return items


def _model_and_tokenizer(model: Any, tokenizer: Any, base_model: str, config: Any) -> tuple[Any, Any]:
    """The given model and tokenizer, or ``base_model`` loaded in fp32 when either is missing."""
    if model is None or tokenizer is None:
        from retrievekit.core.llm.models import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(base_model, device=config.device, dtype="float32")
    return model, tokenizer


def _judge(model: Any, tokenizer: Any, prompt: JudgePrompt, batch_size: int, base_model: str) -> Judge:
    """An uncalibrated judge on the model as it is now."""
    return Judge(model, tokenizer, prompt=prompt, batch_size=batch_size, base_model=base_model)


@dataclass(frozen=True)
class _JudgeData:
    """The split of the pairs: training examples and counts, the holdout, and the pairs the calibration fits on."""

    examples: list[Any]
    stats: dict[str, Any]
    held: list[JudgePair]
    calib: list[JudgePair]

    @property
    def calib_xy(self) -> list[tuple[str, str]]:
        return [(p.query, p.passage) for p in self.calib]

    @property
    def calib_y(self) -> np.ndarray:
        return np.array([p.label for p in self.calib])


def _judge_data(
    pairs: list[JudgePair], tokenizer: Any, prompt: JudgePrompt, *, holdout: float, seed: int, balance: bool
) -> _JudgeData:
    """Hold out a share of the queries, build the training examples, pick the calibration pairs."""
    train_pairs, held = split_by_query(pairs, holdout=holdout, seed=seed)
    if {p.label for p in train_pairs} != {0, 1}:
        raise InvalidInputError("after the holdout split the training side lacks one label; lower holdout")
    examples, stats = build_examples(train_pairs, tokenizer, prompt, balance=balance)
    stats["holdout_pairs"] = len(held)
    stats["holdout_queries"] = len({p.query_id for p in held})
    calib = held if {p.label for p in held} == {0, 1} else train_pairs
    stats["calibrated_on"] = "holdout" if calib is held else "train"
    return _JudgeData(examples, stats, held, calib)


def _holdout_auc_before(judge: Judge, data: _JudgeData) -> float | None:
    """ROC AUC of the untrained judge's margins on the holdout; puts the model back in train mode."""
    auc = _nan_to_none(roc_auc(judge.margins([(p.query, p.passage) for p in data.held]), data.calib_y))
    judge.model.train()
    return auc


def _initial_settings(prompt: JudgePrompt) -> dict[str, Any]:
    """The manifest settings the trainer stores (Platt identity; the fitted values replace it afterwards)."""
    return {
        "template_id": prompt.template_id,
        "max_passage_tokens": prompt.max_passage_tokens,
        "max_query_tokens": prompt.max_query_tokens,
        "answer_yes": ANSWER_YES,
        "answer_no": ANSWER_NO,
        "platt_a": 1.0,
        "platt_b": 0.0,
    }


def _fit_calibration(margins: np.ndarray, data: _JudgeData) -> tuple[float, float]:
    """Platt ``(a, b)`` on the calibration pairs; warns (at train_judge's caller) when the slope is clamped."""
    a, b = fit_platt(margins, data.calib_y, min_slope=MIN_PLATT_SLOPE)
    if a <= MIN_PLATT_SLOPE:
        warnings.warn(
            f"the calibration pairs rank against the judge's margins (fitted slope <= 0 on {len(data.calib)} pairs); "
            f"slope fixed at {MIN_PLATT_SLOPE}: train longer or hold out more queries",
            stacklevel=3,
        )
    return a, b


def _record_calibration(
    output_dir: str | Path, data: _JudgeData, platt: tuple[float, float], aucs: tuple[float | None, float | None]
) -> Path:
    """Write the Platt parameters, the data counts and the calibration into the saved model's manifest."""
    from retrievekit.core.training import read_model_manifest, resolve_model_dir, write_model_manifest
    from retrievekit.core.training.adapter import ADAPTER_SUBDIR, is_adapter_folder

    a, b = platt
    model_dir = resolve_model_dir(output_dir)
    manifest = read_model_manifest(model_dir)
    calibration = {
        "n": len(data.calib),
        "on": data.stats["calibrated_on"],
        "auc_before": aucs[0],
        "auc_after": aucs[1],
        "slope_clamped": a <= MIN_PLATT_SLOPE,
    }
    manifest = replace(
        manifest,
        settings={**manifest.settings, "platt_a": a, "platt_b": b},
        train={**manifest.train, "judge_data": data.stats, "calibration": calibration},
    )
    write_model_manifest(model_dir, manifest)
    adapter_dir = Path(output_dir) / ADAPTER_SUBDIR
    if is_adapter_folder(adapter_dir):  # a LoRA run's adapter ships alone: it carries the same settings
        write_model_manifest(adapter_dir, manifest)
    return model_dir


def train_judge(
    pairs: Sequence[JudgePair],
    *,
    output_dir: str | Path,
    llm: str = DEFAULT_MODEL,
    model: Any = None,
    tokenizer: Any = None,
    train_config: Any = None,
    holdout: float = 0.1,
    max_passage_tokens: int = 256,
    max_query_tokens: int = 64,
    balance: bool = True,
    eval_before: bool = True,
    seed: int = 0,
    resume: bool = True,
    progress: bool = True,
    score_batch_size: int = 32,
    on_step: Any = None,
) -> JudgeTrainResult:
    """Fine-tune ``llm`` (or the given ``model``/``tokenizer``, labelled ``llm``) as a judge.

    Args:
        pairs: labelled pairs (both labels needed), e.g. :func:`~retrievekit.core.judge.data.pairs_from_qrels` +
            :func:`~retrievekit.core.judge.data.mine_hard_negatives`.
        output_dir: training folder (checkpoints, then ``model/`` with the manifest).
        llm: registry name loaded when ``model`` is None (default ``DEFAULT_MODEL``); the manifest's ``base_model``.
        model, tokenizer: an already loaded causal LM to fine-tune (tests pass a tiny one).
        train_config: a :class:`~retrievekit.core.training.TrainConfig` (default: its defaults).
        holdout: share of the queries held out for the Platt fit (issue #9 design: 10%). 0 fits on training pairs.
        max_passage_tokens, max_query_tokens: prompt truncation (see :class:`JudgePrompt`).
        balance: repeat the minority class when labels are skewed (hard negatives outnumber positives 3:1).
        eval_before: score the holdout before training too (AUC before/after in the result).
        seed: seed of the holdout split (training order uses ``train_config.seed``).
        resume, progress, on_step: passed to the shared trainer.
        score_batch_size: batch size of the calibration scoring.

    Examples:
        >>> import tempfile
        >>> from retrievekit.core.training import TrainConfig
        >>> docs = {"a": ("Aspirin thins the blood.", 1), "w": ("Wind farms make power.", 0)}
        >>> pairs = [JudgePair(f"what thins blood {i}?", t, y, f"q{i}", d) for i in range(10) for d, (t, y) in docs.items()]
        >>> train_judge(pairs, output_dir=tempfile.mkdtemp(), train_config=TrainConfig(max_steps=2), progress=False).train["steps"]  # doctest: +SKIP
        2
    """
    from retrievekit.core.training import TrainConfig, train_causal_lm

    t0 = time.perf_counter()
    pairs = _checked_pairs(pairs)
    config = train_config if train_config is not None else TrainConfig()
    model, tokenizer = _model_and_tokenizer(model, tokenizer, llm, config)
    prompt = JudgePrompt(PLAIN_TEMPLATE_ID, max_passage_tokens=max_passage_tokens, max_query_tokens=max_query_tokens)
    data = _judge_data(pairs, tokenizer, prompt, holdout=holdout, seed=seed, balance=balance)
    judge_args = (model, tokenizer, prompt, score_batch_size, llm)
    auc_before = _holdout_auc_before(_judge(*judge_args), data) if eval_before and data.held else None
    result = train_causal_lm(
        model,
        tokenizer,
        data.examples,
        config,
        output_dir,
        kind=JUDGE_KIND,
        base_model=llm,
        settings=_initial_settings(prompt),
        resume=resume,
        progress=progress,
        on_step=on_step,
    )
    margins = _judge(*judge_args).margins(data.calib_xy)
    a, b = _fit_calibration(margins, data)
    auc_after = _nan_to_none(roc_auc(margins, data.calib_y)) if data.held else None
    model_dir = _record_calibration(output_dir, data, (a, b), (auc_before, auc_after))
    return JudgeTrainResult(
        model_dir=model_dir,
        platt=(a, b),
        data=data.stats,
        holdout_auc_before=auc_before,
        holdout_auc_after=auc_after,
        train=result.to_dict(),
        seconds=time.perf_counter() - t0,
    )
