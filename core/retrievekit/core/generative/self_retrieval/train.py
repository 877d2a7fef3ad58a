"""Train a Self-Retrieval model: build the data from a corpus (+ query pairs), fine-tune, save with a manifest.

The model is fine-tuned by the shared trainer (:func:`retrievekit.core.training.train_causal_lm`: full fine-tuning
or LoRA, bf16 autocast on GPU, fp32 on CPU, resumable checkpoints) and saved to ``output_dir/model/`` as safetensors
with a manifest: kind ``"self-retrieval"``, the corpus fingerprint, the base model and the prompt/title settings, so
:meth:`~retrievekit.core.generative.self_retrieval.method.SelfRetrieval.from_model_dir` refuses it for another corpus.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.checks import check_corpus
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.generative.self_retrieval.config import SelfRetrievalConfig
from retrievekit.core.generative.self_retrieval.data import QueryPair, build_training_examples
from retrievekit.core.generative.self_retrieval.method import KIND
from retrievekit.core.generative.self_retrieval.passages import split_passages
from retrievekit.core.index.baselines import corpus_fingerprint
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.training import TrainConfig, TrainResult, encode_example, train_causal_lm
from retrievekit.core.types import DataObject

__all__ = ["make_clip", "train_self_retrieval"]


def make_clip(tokenizer: Any, max_tokens: int, counts: dict[str, int] | None = None) -> Callable[[str], str]:
    """A function that cuts a text to its first ``max_tokens`` tokens (decoded), counting the cuts.

    Examples:
        >>> class Tok:
        ...     def encode(self, t, add_special_tokens=False): return list(range(len(t.split())))
        ...     def decode(self, ids): return " ".join("w" for _ in ids)
        >>> make_clip(Tok(), 2)("a b c")
        'w w'
    """
    cache: dict[str, str] = {}

    def clip(text: str) -> str:
        got = cache.get(text)
        if got is None:
            ids = tokenizer.encode(text, add_special_tokens=False)
            got = text if len(ids) <= max_tokens else str(tokenizer.decode(ids[:max_tokens])).rstrip()
            if counts is not None and got is not text:
                counts["passages_clipped"] = counts.get("passages_clipped", 0) + 1
            cache[text] = got
        return got

    return clip


def _as_pairs(pairs: Sequence[QueryPair | tuple[str, str] | tuple[str, str, str]] | None) -> list[QueryPair]:
    out: list[QueryPair] = []
    for p in pairs or ():
        if isinstance(p, QueryPair):
            out.append(p)
        elif isinstance(p, (tuple, list)) and len(p) in (2, 3):
            out.append(QueryPair(str(p[0]), str(p[1]), str(p[2]) if len(p) == 3 else None))
        else:
            raise InvalidInputError(f"query pairs must be QueryPair or (query, target_id[, answer]), got {p!r}")
    return out


def train_self_retrieval(
    corpus: Sequence[DataObject],
    *,
    output_dir: str | os.PathLike[str],
    pairs: Sequence[QueryPair | tuple[str, str] | tuple[str, str, str]] | None = None,
    llm: str = DEFAULT_MODEL,
    model: Any = None,
    tokenizer: Any = None,
    config: SelfRetrievalConfig | None = None,
    train_config: TrainConfig | None = None,
    resume: bool = True,
    progress: bool = True,
    on_step: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Fine-tune ``llm`` (a registry name, loaded fresh) or the given ``model``/``tokenizer`` on ``corpus``.

    Args:
        corpus: the documents to internalise (the same list must be passed at retrieval time).
        output_dir: checkpoints go to ``output_dir/checkpoint/`` (resumed when ``resume``), the model to
            ``output_dir/model/``.
        pairs: supervision ``(query, document or passage id[, answer])``; none -> indexing data only.
        llm: registry name (default ``DEFAULT_MODEL``) or, with ``model``, a label; the manifest's ``base_model``.
        config: :class:`SelfRetrievalConfig` (data building; its prompt/title settings go into the manifest).
        train_config: :class:`~retrievekit.core.training.TrainConfig` (defaults: the reference ``sft.sh``).
        on_step: called after every optimizer step (``step, loss``).

    Returns:
        The trainer's :class:`~retrievekit.core.training.TrainResult`; ``data_stats`` counts go into the manifest
        settings.

    Examples:
        >>> import tempfile
        >>> from retrievekit.core.types import Passage
        >>> corpus = [Passage(id="a", title="Aspirin", text="Aspirin thins the blood."), Passage(id="w", text="Wind.")]
        >>> train_self_retrieval(corpus, pairs=[("What thins the blood?", "a")], output_dir=tempfile.mkdtemp(),
        ...                      train_config=TrainConfig(max_steps=2), progress=False).steps  # trains SmolLM2  # doctest: +SKIP
        2
    """
    corpus = check_corpus(corpus)
    cfg = config or SelfRetrievalConfig()
    tcfg = train_config or TrainConfig()
    if (model is None) != (tokenizer is None):
        raise InvalidInputError("pass both model and tokenizer, or neither (then llm is loaded)")
    if model is None:
        from retrievekit.core.llm.models import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(llm)
    passages = split_passages(corpus, cfg)
    counts: dict[str, int] = {}
    # leave room for the query, the title and the response inside max_length (the trainer cuts from the right)
    clip = make_clip(tokenizer, min(cfg.max_passage_tokens, max(16, tcfg.max_length - 128)), counts)
    examples, stats = build_training_examples(passages, cfg, _as_pairs(pairs), clip=clip)
    kept = []
    for ex in examples:  # an instance whose trainable span would be cut away entirely (a very long query) is dropped
        try:
            encode_example(ex, tokenizer, max_length=tcfg.max_length)
        except InvalidInputError:
            counts["dropped_too_long"] = counts.get("dropped_too_long", 0) + 1
            continue
        kept.append(ex)
    examples = kept
    if not examples:
        raise InvalidInputError(f"no training instance fits max_length={tcfg.max_length}; raise it")
    stats.update(counts)
    stats.update({f"corpus_{k}": v for k, v in passages.stats.items()})
    settings: dict[str, Any] = {**cfg.match_settings(), "index_mode": cfg.index_mode, "data": stats}
    return train_causal_lm(
        model,
        tokenizer,
        examples,
        tcfg,
        Path(output_dir),
        kind=KIND,
        base_model=llm,
        corpus_hash=corpus_fingerprint(corpus),
        settings=settings,
        resume=resume,
        progress=progress,
        on_step=on_step,
    )
