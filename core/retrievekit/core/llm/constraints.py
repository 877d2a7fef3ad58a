"""The constrained-prefix rule: which token ids may follow a generated prefix under a stateless constraint.

One rule for every constrained decoder (``LocalLM.constrained_beam_search`` and the Outlines / transformers
processors in ``retrievekit.outlines``): ``allowed(prefix)`` gives the ids a constraint (a
:class:`~retrievekit.core.index.token_trie.TokenTrie`, a
:class:`~retrievekit.core.index.suffix_array.TokenSuffixArray` or any ``prefix -> ids`` callable) allows after the
generated ids (prompt excluded); a row that has emitted EOS has ended and may only repeat EOS; a prefix with nothing
allowed may only emit EOS (the row ends there).

Examples:
    >>> from retrievekit.core.index.token_trie import TokenTrie
    >>> trie = TokenTrie([[5, 6], [5, 7]], eos_token_id=2)
    >>> next_allowed_tokens(trie, [], 2), next_allowed_tokens(trie, [5], 2), next_allowed_tokens(trie, [5, 6], 2)
    ([5], [6, 7], [2])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["allowed_token_ids", "next_allowed_array", "next_allowed_tokens"]

AllowedFn = Callable[[Sequence[int]], Any]


def allowed_token_ids(allowed: AllowedFn, prefix: Sequence[int], *, vocab_size: int | None = None) -> np.ndarray:
    """What the constraint ``allowed`` allows after ``prefix``, as a 1-D ``int64`` array.

    Uses the constraint's ``allowed_array`` when it has one (tries and suffix arrays: no Python list). With
    ``vocab_size`` given, an id outside ``[0, vocab_size)`` raises
    :class:`~retrievekit.core.errors.InvalidInputError`.

    Examples:
        >>> allowed_token_ids(lambda prefix: [3, 4], [1]).tolist()
        [3, 4]
        >>> allowed_token_ids(lambda prefix: [9], [], vocab_size=5)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: allowed_tokens returned id 9, outside the vocabulary [0, 5)
    """
    fast = getattr(allowed, "allowed_array", None)
    ids = np.asarray(fast(prefix) if fast is not None else allowed(prefix), dtype=np.int64).reshape(-1)
    if vocab_size is not None and ids.size:
        bad = ids[(ids < 0) | (ids >= vocab_size)]
        if bad.size:
            raise InvalidInputError(
                f"allowed_tokens returned id {int(bad[0])}, outside the vocabulary [0, {vocab_size})"
            )
    return ids


def next_allowed_array(
    allowed: AllowedFn, generated: Sequence[int], eos_token_id: int | None, *, vocab_size: int | None = None
) -> np.ndarray:
    """The ids allowed after ``generated`` (the generated ids so far, prompt excluded), by the rule above.

    EOS only once the row holds EOS or when the constraint allows nothing (nothing at all when ``eos_token_id`` is
    None); otherwise :func:`allowed_token_ids`.

    Examples:
        >>> next_allowed_array(lambda prefix: [], [4], 0).tolist(), next_allowed_array(lambda prefix: [], [4], None).tolist()
        ([0], [])
    """
    if eos_token_id is not None and eos_token_id in generated:
        return np.asarray([eos_token_id], dtype=np.int64)
    ids = allowed_token_ids(allowed, generated, vocab_size=vocab_size)
    if ids.size == 0 and eos_token_id is not None:
        return np.asarray([eos_token_id], dtype=np.int64)
    return ids


def next_allowed_tokens(
    allowed: AllowedFn, generated: Sequence[int], eos_token_id: int | None, *, vocab_size: int | None = None
) -> list[int]:
    """:func:`next_allowed_array` as a list of ints (the ``prefix_allowed_tokens_fn`` reply of ``generate``).

    Examples:
        >>> next_allowed_tokens(lambda prefix: [7, 8], [1, 2], 0), next_allowed_tokens(lambda prefix: [7], [1, 0], 0)
        ([7, 8], [0])
    """
    return [int(t) for t in next_allowed_array(allowed, generated, eos_token_id, vocab_size=vocab_size)]
