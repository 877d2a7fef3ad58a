"""Training instances as spans with trainable flags, their encoding into token ids + labels, and batching.

An instance is a sequence of :class:`Segment` s; the loss is computed only on the tokens of trainable segments
(the ``[[segments...], [trainable flags...]]`` pairs of Self-Retrieval's reference data, ``icip-cas/SelfRetrieval``).
Each segment is tokenized on its own (``add_special_tokens=False``) and the ids are concatenated, so the token
boundary between a prompt and its target is exactly the segment boundary (no BPE merge across it); a BOS token is
prepended when the tokenizer has one and an EOS token is appended as a trainable token.

Examples:
    >>> class _Tok:  # a stand-in tokenizer: one id per character
    ...     bos_token_id, eos_token_id = 1, 2
    ...     def __call__(self, text, add_special_tokens=False):
    ...         return {"input_ids": [10 + ord(c) % 50 for c in text]}
    >>> ex = TrainingExample((Segment("Q: "), Segment("ab", trainable=True)), kind="demo")
    >>> enc = encode_example(ex, _Tok(), max_length=16)
    >>> enc.input_ids
    (1, 41, 18, 42, 57, 58, 2)
    >>> enc.labels
    (-100, -100, -100, -100, 57, 58, 2)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from retrievekit.core.errors import InvalidInputError

__all__ = [
    "IGNORE_INDEX",
    "EncodedExample",
    "Segment",
    "TrainingExample",
    "collate",
    "encode_example",
    "encode_examples",
    "examples_fingerprint",
]

IGNORE_INDEX = -100
"""Label of a token that carries no loss (PyTorch ``cross_entropy``'s default ``ignore_index``)."""


@dataclass(frozen=True)
class Segment:
    """One span of a training instance; the loss is computed only on trainable spans.

    Attributes:
        text: the span's text (may be empty).
        trainable: whether the model learns to produce this span.

    Examples:
        >>> Segment("Related document title: "), Segment("aspirin", trainable=True).trainable
        (Segment(text='Related document title: ', trainable=False), True)
    """

    text: str
    trainable: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise InvalidInputError(f"Segment.text must be str, got {type(self.text).__name__}")


@dataclass(frozen=True)
class TrainingExample:
    """A training instance: segments in order, a kind label for statistics, EOS/BOS handling.

    Attributes:
        segments: the spans, concatenated in order.
        kind: a label such as ``"index"``, ``"query-title"``, ``"reject"``, ``"judge-yes"`` (counted in the stats
            and named in errors).
        add_eos: append the tokenizer's EOS token as a trainable token at the end (teaches the model to stop).
        add_bos: prepend the tokenizer's BOS token when it has one. Keep it equal to what inference does: the
            scorer should see the same prefix it was trained on.

    Examples:
        >>> ex = TrainingExample((Segment("Question: q\\n Title: "), Segment("aspirin", True)), kind="query-title")
        >>> ex.trainable_text
        'aspirin'
    """

    segments: tuple[Segment, ...]
    kind: str = ""
    add_eos: bool = True
    add_bos: bool = True

    def __post_init__(self) -> None:
        segs = self.segments
        if isinstance(segs, (str, Segment)) or not isinstance(segs, Iterable):
            raise InvalidInputError("TrainingExample.segments must be a sequence of Segment")
        segs = tuple(segs)
        if not all(isinstance(s, Segment) for s in segs):
            raise InvalidInputError("TrainingExample.segments must hold Segment objects only")
        object.__setattr__(self, "segments", segs)

    @property
    def trainable_text(self) -> str:
        """The concatenated text of the trainable segments.

        Examples:
            >>> TrainingExample((Segment("a"), Segment("b", True), Segment("c", True))).trainable_text
            'bc'
        """
        return "".join(s.text for s in self.segments if s.trainable)


@dataclass(frozen=True)
class EncodedExample:
    """Token ids and labels of one instance (labels are ``-100`` where no loss is computed).

    Attributes:
        input_ids: the token ids.
        labels: the id to predict at each position, or ``-100`` (not trainable). Same length as ``input_ids``;
            the causal shift happens in the model.
        truncated: the instance was longer than ``max_length`` and was cut from the right.

    Examples:
        >>> EncodedExample((1, 5, 6), (-100, 5, 6), False).n_loss_tokens
        2
    """

    input_ids: tuple[int, ...]
    labels: tuple[int, ...]
    truncated: bool

    @property
    def n_loss_tokens(self) -> int:
        """How many tokens carry loss (the label ``-100`` at position 0 never does, after the causal shift).

        Examples:
            >>> EncodedExample((1, 5), (-100, 5), False).n_loss_tokens
            1
        """
        return sum(1 for lab in self.labels[1:] if lab != IGNORE_INDEX)


def _token_ids(tokenizer: Any, text: str) -> list[int]:
    if not text:
        return []
    out = tokenizer(text, add_special_tokens=False)
    ids = out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys") else out
    return [int(t) for t in ids]


def encode_example(example: TrainingExample, tokenizer: Any, *, max_length: int) -> EncodedExample:
    """Token ids + labels of one instance.

    Segments are tokenized separately without special tokens and concatenated; BOS is prepended when the
    tokenizer has one (and ``example.add_bos``); EOS is appended as a trainable token (``example.add_eos``).
    Longer than ``max_length`` -> cut from the right, ``truncated=True``.

    Raises:
        InvalidInputError: no trainable segment; no trainable token left after truncation (the message names the
            kind); ``add_eos`` with a tokenizer that has no EOS; ``max_length < 2``.

    Examples:
        >>> class _Tok:
        ...     bos_token_id, eos_token_id = None, 2
        ...     def __call__(self, text, add_special_tokens=False):
        ...         return {"input_ids": [5] * len(text)}
        >>> enc = encode_example(TrainingExample((Segment("abc"), Segment("de", True))), _Tok(), max_length=4)
        >>> enc.labels, enc.truncated
        ((-100, -100, -100, 5), True)
        >>> encode_example(TrainingExample((Segment("abc"), Segment("de", True)), kind="idx"), _Tok(), max_length=3)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: the 'idx' example has no trainable token left after truncation to 3 tokens...
    """
    if not isinstance(example, TrainingExample):
        raise InvalidInputError(f"expected a TrainingExample, got {type(example).__name__}")
    if not isinstance(max_length, int) or max_length < 2:
        raise InvalidInputError(f"max_length must be an int >= 2, got {max_length!r}")
    kind = f"the {example.kind!r}" if example.kind else "an unlabelled"
    if not any(s.trainable for s in example.segments):
        raise InvalidInputError(f"{kind} example has no trainable segment; mark the target span trainable=True")
    ids: list[int] = []
    labels: list[int] = []
    bos = getattr(tokenizer, "bos_token_id", None)
    if example.add_bos and bos is not None:
        ids.append(int(bos))
        labels.append(IGNORE_INDEX)
    for seg in example.segments:
        seg_ids = _token_ids(tokenizer, seg.text)
        ids.extend(seg_ids)
        labels.extend(seg_ids if seg.trainable else [IGNORE_INDEX] * len(seg_ids))
    if example.add_eos:
        eos = getattr(tokenizer, "eos_token_id", None)
        if eos is None:
            raise InvalidInputError("add_eos=True but the tokenizer has no EOS token; pass add_eos=False")
        ids.append(int(eos))
        labels.append(int(eos))
    truncated = len(ids) > max_length
    if truncated:
        ids, labels = ids[:max_length], labels[:max_length]
    if not any(lab != IGNORE_INDEX for lab in labels[1:]):
        where = f"after truncation to {max_length} tokens" if truncated else "(its trainable segments are empty)"
        raise InvalidInputError(
            f"{kind} example has no trainable token left {where}; shorten its prompt or raise max_length"
        )
    return EncodedExample(tuple(ids), tuple(labels), truncated)


def encode_examples(
    examples: Iterable[TrainingExample], tokenizer: Any, *, max_length: int
) -> tuple[list[EncodedExample], dict[str, int]]:
    """Encode many instances; returns them and statistics.

    The stats hold ``n`` (instances), ``truncated`` (cut ones), ``tokens`` (all tokens), ``loss_tokens`` and one
    ``"kind:<kind>"`` count per kind.

    Examples:
        >>> class _Tok:
        ...     bos_token_id, eos_token_id = 1, 2
        ...     def __call__(self, text, add_special_tokens=False):
        ...         return {"input_ids": [5] * len(text)}
        >>> exs = [TrainingExample((Segment("q"), Segment("t", True)), kind="a")] * 2
        >>> _, stats = encode_examples(exs, _Tok(), max_length=8)
        >>> stats
        {'n': 2, 'truncated': 0, 'tokens': 8, 'loss_tokens': 4, 'kind:a': 2}
    """
    encoded: list[EncodedExample] = []
    stats: dict[str, int] = {"n": 0, "truncated": 0, "tokens": 0, "loss_tokens": 0}
    for ex in examples:
        enc = encode_example(ex, tokenizer, max_length=max_length)
        encoded.append(enc)
        stats["n"] += 1
        stats["truncated"] += int(enc.truncated)
        stats["tokens"] += len(enc.input_ids)
        stats["loss_tokens"] += enc.n_loss_tokens
        key = f"kind:{ex.kind}"
        stats[key] = stats.get(key, 0) + 1
    return encoded, stats


def examples_fingerprint(encoded: Sequence[EncodedExample]) -> str:
    """A stable hash of encoded instances (ids and labels, in order): identifies a training set.

    Examples:
        >>> a = [EncodedExample((1, 2), (-100, 2), False)]
        >>> examples_fingerprint(a) == examples_fingerprint(list(a)), len(examples_fingerprint(a))
        (True, 16)
    """
    h = hashlib.sha256()
    for enc in encoded:
        h.update(json.dumps([enc.input_ids, enc.labels]).encode("ascii"))
        h.update(b"\n")
    return h.hexdigest()[:16]


def collate(batch: Sequence[EncodedExample], pad_id: int) -> dict[str, Any]:
    """Right-pad a batch into ``input_ids``, ``attention_mask`` and ``labels`` tensors (``torch.long``).

    Padding gets ``pad_id`` in ``input_ids``, 0 in the mask and ``-100`` in the labels.

    Examples:
        >>> b = collate([EncodedExample((1, 5), (-100, 5), False), EncodedExample((1,), (-100,), False)], pad_id=0)
        >>> b["input_ids"].tolist(), b["attention_mask"].tolist(), b["labels"].tolist()
        ([[1, 5], [1, 0]], [[1, 1], [1, 0]], [[-100, 5], [-100, -100]])
    """
    import torch

    if not batch:
        raise InvalidInputError("cannot collate an empty batch")
    width = max(len(e.input_ids) for e in batch)
    input_ids = torch.full((len(batch), width), int(pad_id), dtype=torch.long)
    attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE_INDEX, dtype=torch.long)
    for i, e in enumerate(batch):
        n = len(e.input_ids)
        input_ids[i, :n] = torch.tensor(e.input_ids, dtype=torch.long)
        attention_mask[i, :n] = 1
        labels[i, :n] = torch.tensor(e.labels, dtype=torch.long)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
