"""Trie and suffix-array constraints for Outlines and for transformers ``generate``.

Two ways to put a stateless allowed-next-tokens function (a :class:`~retrievekit.core.index.token_trie.TokenTrie`, a
:class:`~retrievekit.core.index.suffix_array.TokenSuffixArray`, or any ``prefix -> ids`` callable) in front of a model:

* :class:`AllowedTokensLogitsProcessor` (and its :class:`TrieLogitsProcessor` / :class:`SuffixArrayLogitsProcessor`
  spellings) -- an Outlines ``OutlinesLogitsProcessor`` for ``outlines.Generator(model, processor=...)``, or for
  ``hf_model.generate(logits_processor=LogitsProcessorList([...]))``;
* :func:`prefix_allowed_tokens_fn` -- the ``prefix_allowed_tokens_fn`` hook of ``generate(num_beams>1)``.

Both derive the generated part of each row from the row itself (the prompt length is fixed on the first call), so
they are safe under beam search, which reorders rows. The mask is built in one indexed assignment over all rows
(no Python loop over the vocabulary). A row with nothing allowed may only emit EOS.

Examples:
    >>> from retrievekit.core.index.token_trie import TokenTrie
    >>> import torch
    >>> proc = TrieLogitsProcessor(TokenTrie([[5, 6], [5, 7]], eos_token_id=2), prompt_length=2)
    >>> out = proc(torch.tensor([[1, 1, 5], [1, 1, 9]]), torch.zeros(2, 10))  # prompt [1, 1], then 5 / 9
    >>> torch.isfinite(out[0]).nonzero().flatten().tolist(), torch.isfinite(out[1]).nonzero().flatten().tolist()
    ([6, 7], [2])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from outlines.processors import OutlinesLogitsProcessor

from retrievekit.core.index.suffix_array import ShardedTokenSuffixArray, TokenSuffixArray
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.llm.constraints import next_allowed_array, next_allowed_tokens

__all__ = [
    "AllowedTokensLogitsProcessor",
    "SuffixArrayLogitsProcessor",
    "TrieLogitsProcessor",
    "allowed_mask",
    "prefix_allowed_tokens_fn",
]

AllowedFn = Callable[[Sequence[int]], Any]


def allowed_mask(
    allowed: AllowedFn,
    generated: Sequence[Sequence[int]],
    vocab_size: int,
    eos_token_id: int | None,
    device: Any = None,
) -> torch.Tensor:
    """Boolean ``(rows, vocab_size)`` mask, True where a token is allowed after each row's generated prefix.

    Built with one indexed assignment for all rows; each row's ids follow the constrained-prefix rule of
    :func:`~retrievekit.core.llm.constraints.next_allowed_array` (a row holding EOS, or with no allowed token, gets
    EOS only, when known); ids outside ``[0, vocab_size)`` are ignored.

    Examples:
        >>> from retrievekit.core.index.token_trie import TokenTrie
        >>> allowed_mask(TokenTrie([[1, 2]], eos_token_id=0), [[], [1], [1, 2]], 4, 0).int().tolist()
        [[0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0]]
    """
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    for r, prefix in enumerate(generated):
        ids = next_allowed_array(allowed, prefix, eos_token_id)  # the rule shared with LocalLM
        rows.append(np.full(ids.size, r, dtype=np.int64))
        cols.append(ids)
    mask = torch.zeros((len(generated), vocab_size), dtype=torch.bool, device=device)
    if rows:
        r_idx = np.concatenate(rows)
        c_idx = np.concatenate(cols)
        keep = (c_idx >= 0) & (c_idx < vocab_size)
        mask[torch.from_numpy(r_idx[keep]).to(mask.device), torch.from_numpy(c_idx[keep]).to(mask.device)] = True
    return mask


class AllowedTokensLogitsProcessor(OutlinesLogitsProcessor):  # type: ignore[misc]
    """An Outlines logits processor for any stateless ``allowed(prefix) -> ids`` constraint.

    Args:
        allowed: a ``TokenTrie``, ``TokenSuffixArray`` or any callable returning allowed ids for a prefix.
        eos_token_id: the token forced when nothing is allowed (and kept after a row has ended).
        prompt_length: tokens of the prompt in ``input_ids``; ``None`` takes the width of the first call
            (transformers passes prompt + generated ids, left-padded to one width). :meth:`reset` clears it.

    Pass it to ``outlines.Generator(outlines.from_transformers(model, tokenizer), processor=...)`` or to
    ``model.generate(..., logits_processor=LogitsProcessorList([...]))``; each call masks the next-token logits:

    Examples:
        >>> p = AllowedTokensLogitsProcessor(lambda prefix: [] if prefix else [3], eos_token_id=0)
        >>> p(torch.tensor([[7, 7]]), torch.zeros(1, 4)).tolist()  # the prompt [7, 7]: only token 3 may follow
        [[-inf, -inf, -inf, 0.0]]
        >>> p(torch.tensor([[7, 7, 3]]), torch.zeros(1, 4)).tolist()  # nothing allowed after [3]: EOS only
        [[0.0, -inf, -inf, -inf]]
    """

    def __init__(
        self, allowed: AllowedFn, eos_token_id: int | None = None, *, prompt_length: int | None = None
    ) -> None:
        super().__init__("torch")
        self.allowed = allowed
        self.eos_token_id = eos_token_id if eos_token_id is not None else getattr(allowed, "eos_token_id", None)
        self._fixed_prompt_length = prompt_length
        self.prompt_length = prompt_length

    def reset(self) -> None:
        """Forget the prompt length (call between generations).

        Examples:
            >>> p = AllowedTokensLogitsProcessor(lambda prefix: [1]); p.prompt_length = 3; p.reset()
            >>> p.prompt_length is None
            True
        """
        self.prompt_length = self._fixed_prompt_length

    def process_logits(self, input_ids: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """Set every disallowed logit to ``-inf``.

        Examples:
            >>> p = AllowedTokensLogitsProcessor(lambda prefix: [2], prompt_length=1)
            >>> p.process_logits(torch.tensor([[0]]), torch.zeros(1, 3)).tolist()
            [[-inf, -inf, 0.0]]
        """
        if self.prompt_length is None:
            self.prompt_length = int(input_ids.shape[1])
        gen = input_ids[:, self.prompt_length :].tolist()
        eos = self.eos_token_id
        prefixes = []
        ended = []
        for r, row in enumerate(gen):
            if eos is not None and eos in row:
                ended.append(r)
                row = row[: row.index(eos)]
            prefixes.append(row)
        mask = allowed_mask(self.allowed, prefixes, int(logits.shape[-1]), eos, logits.device)
        if ended and eos is not None:
            mask[ended] = False
            mask[ended, eos] = True
        return logits.masked_fill(~mask, float("-inf"))


class TrieLogitsProcessor(AllowedTokensLogitsProcessor):
    """Outlines processor that keeps generation on the paths of a :class:`TokenTrie` (e.g. corpus titles).

    Examples:
        >>> from retrievekit.core.index.token_trie import TokenTrie
        >>> TrieLogitsProcessor(TokenTrie([[3]], eos_token_id=0)).eos_token_id
        0
    """

    def __init__(self, trie: TokenTrie, eos_token_id: int | None = None, *, prompt_length: int | None = None) -> None:
        super().__init__(trie, eos_token_id, prompt_length=prompt_length)


class SuffixArrayLogitsProcessor(AllowedTokensLogitsProcessor):
    """Outlines processor that keeps generation inside substrings of the indexed documents (the FM-index role).

    Examples:
        >>> from retrievekit.core.index.suffix_array import TokenSuffixArray
        >>> SuffixArrayLogitsProcessor(TokenSuffixArray([[3, 4]]), eos_token_id=0).eos_token_id
        0
    """

    def __init__(
        self,
        index: TokenSuffixArray | ShardedTokenSuffixArray,
        eos_token_id: int | None = None,
        *,
        prompt_length: int | None = None,
    ) -> None:
        super().__init__(index, eos_token_id, prompt_length=prompt_length)


def prefix_allowed_tokens_fn(
    allowed: AllowedFn, prompt_length: int, eos_token_id: int | None = None
) -> Callable[[int, torch.Tensor], list[int]]:
    """A ``prefix_allowed_tokens_fn(batch_id, input_ids)`` for ``model.generate(num_beams=...)``.

    ``prompt_length`` is the width of the (left-padded) prompt batch; rows that ended with EOS may only repeat
    EOS; a prefix with nothing allowed gets EOS only.

    Examples:
        >>> from retrievekit.core.index.token_trie import TokenTrie
        >>> fn = prefix_allowed_tokens_fn(TokenTrie([[5, 6]], eos_token_id=2), prompt_length=1)
        >>> fn(0, torch.tensor([9])), fn(0, torch.tensor([9, 5])), fn(0, torch.tensor([9, 5, 6]))
        ([5], [6], [2])
    """
    eos = eos_token_id if eos_token_id is not None else getattr(allowed, "eos_token_id", None)

    def fn(batch_id: int, input_ids: torch.Tensor) -> list[int]:
        return next_allowed_tokens(allowed, input_ids[prompt_length:].tolist(), eos)

    return fn
