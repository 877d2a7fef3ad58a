"""A trie over token-id sequences, for constrained decoding (titles, keywords, N-grams).

:meth:`TokenTrie.allowed` answers "which tokens may follow this prefix?" from the prefix alone, so it is
stateless and safe to use as a beam-search ``allowed_tokens`` function (see
:meth:`retrievekit.core.llm.local.LocalLM.constrained_beam_search`). A prefix that is a complete sequence also
allows the EOS token, which ends the hypothesis.

Example:
    >>> trie = TokenTrie([[1, 2, 3], [1, 2], [4]], eos_token_id=0)
    >>> trie.allowed([]), trie.allowed([1]), trie.allowed([1, 2]), trie.allowed([9])
    ([1, 4], [2], [0, 3], [])
    >>> [1, 2] in trie, [1] in trie, len(trie)
    (True, False, 3)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from retrievekit.core.errors import InvalidInputError

__all__ = ["TokenTrie"]

_END = -1  # key marking "a sequence ends here" inside a node dict (token ids are never negative)

_Node = dict[int, Any]


class TokenTrie:
    """Dict-of-dicts trie over token-id sequences.

    Args:
        sequences: token-id sequences (each non-empty, ids >= 0, none containing ``eos_token_id``). Duplicates
            are stored once.
        eos_token_id: the token allowed after a complete sequence; ``None`` to never allow one.

    Raises:
        InvalidInputError: an empty sequence, a negative id, or a sequence containing the EOS id.

    Example:
        >>> trie = TokenTrie([[5, 6], [5, 7]], eos_token_id=2)
        >>> trie.allowed([5]), trie.allowed([5, 6])
        ([6, 7], [2])
        >>> sorted(trie)
        [(5, 6), (5, 7)]
    """

    def __init__(self, sequences: Iterable[Sequence[int]] = (), eos_token_id: int | None = None) -> None:
        self.eos_token_id = eos_token_id
        self._root: _Node = {}
        self._size = 0
        for seq in sequences:
            self.add(seq)

    def add(self, sequence: Sequence[int]) -> bool:
        """Insert one sequence; returns False when it was already there.

        Example:
            >>> t = TokenTrie(eos_token_id=0)
            >>> t.add([3, 4]), t.add([3, 4]), len(t)
            (True, False, 1)
        """
        ids = [int(x) for x in sequence]
        if not ids:
            raise InvalidInputError(
                "cannot add an empty token sequence to a TokenTrie (did a text encode to no tokens?)"
            )
        if min(ids) < 0:
            raise InvalidInputError(f"token ids must be >= 0, got {ids}")
        if self.eos_token_id is not None and self.eos_token_id in ids:
            raise InvalidInputError(f"sequence {ids} contains the EOS id {self.eos_token_id}")
        node = self._root
        for tok in ids:
            node = node.setdefault(tok, {})
        if _END in node:
            return False
        node[_END] = True
        self._size += 1
        return True

    @classmethod
    def from_texts(
        cls, texts: Iterable[str], encode: Callable[[str], Sequence[int]], eos_token_id: int | None
    ) -> TokenTrie:
        """Build a trie from texts with a tokenizer's ``encode`` function.

        Example:
            >>> trie = TokenTrie.from_texts(["ab", "ac"], lambda s: [ord(c) for c in s], eos_token_id=0)
            >>> trie.allowed([ord("a")])
            [98, 99]
        """
        trie = cls(eos_token_id=eos_token_id)
        for text in texts:
            ids = list(encode(text))
            if not ids:
                raise InvalidInputError(f"text {text!r} encodes to no tokens")
            trie.add(ids)
        return trie

    def _node(self, prefix: Sequence[int]) -> _Node | None:
        node = self._root
        for tok in prefix:
            t = int(tok)
            if t < 0:
                return None
            nxt = node.get(t)
            if nxt is None:
                return None
            node = nxt
        return node

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """Sorted token ids that may follow ``prefix``; EOS included when ``prefix`` is a complete sequence.

        Returns ``[]`` for a prefix that is not in the trie (including one that already ended with EOS).

        Example:
            >>> TokenTrie([[1, 2]], eos_token_id=0).allowed([1, 2])
            [0]
        """
        node = self._node(prefix)
        if node is None:
            return []
        out = [k for k in node if k != _END]
        if _END in node and self.eos_token_id is not None:
            out.append(self.eos_token_id)
        out.sort()
        return out

    def __call__(self, prefix: Sequence[int]) -> list[int]:
        """Same as :meth:`allowed`, so a trie can be passed directly as ``allowed_tokens``.

        Example:
            >>> TokenTrie([[1]], eos_token_id=0)([])
            [1]
        """
        return self.allowed(prefix)

    def is_prefix(self, prefix: Sequence[int]) -> bool:
        """Whether ``prefix`` starts (or is) some stored sequence.

        Example:
            >>> t = TokenTrie([[1, 2]])
            >>> t.is_prefix([1]), t.is_prefix([2])
            (True, False)
        """
        return self._node(prefix) is not None

    def __contains__(self, sequence: object) -> bool:
        """Whether ``sequence`` is a complete stored sequence (a trailing EOS is ignored).

        Example:
            >>> t = TokenTrie([[1, 2]], eos_token_id=0)
            >>> [1, 2] in t, [1, 2, 0] in t, [1] in t
            (True, True, False)
        """
        if not isinstance(sequence, Sequence) or isinstance(sequence, (str, bytes)):
            return False
        ids = list(sequence)
        if ids and self.eos_token_id is not None and ids[-1] == self.eos_token_id:
            ids = ids[:-1]
        node = self._node(ids)
        return node is not None and _END in node

    def __len__(self) -> int:
        """Number of distinct stored sequences.

        Example:
            >>> len(TokenTrie([[1], [1], [2]]))
            2
        """
        return self._size

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        """Stored sequences as tuples, in depth-first order of token ids.

        Example:
            >>> list(TokenTrie([[2], [1, 3]]))
            [(1, 3), (2,)]
        """
        stack: list[tuple[_Node, tuple[int, ...]]] = [(self._root, ())]
        while stack:
            node, path = stack.pop()
            if _END in node:
                yield path
            for tok in sorted((k for k in node if k != _END), reverse=True):
                stack.append((node[tok], (*path, tok)))

    def __repr__(self) -> str:
        return f"TokenTrie(<{self._size} sequences>, eos_token_id={self.eos_token_id})"
