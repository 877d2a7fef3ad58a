"""Token counting for One-SHOT budgets: a fast deterministic estimate by default, tiktoken or any HF tokenizer on request.

The budget is in tokens of *some* tokenizer; pick the one of the LLM that will read the context when it matters.

* :class:`RegexTokenCounter` (default) -- no dependencies, deterministic. Letters runs of up to 6 characters count 1,
  longer runs ``1 + (len - 3) // 5``; digit runs count one per 3 digits; every other non-space character counts 1.
  It is meant to err on the high side of ``cl100k_base`` so that a budget in estimated tokens rarely overflows a real
  one; the measured ratio and speed are in ``docs/methods/oneshot.md`` ("Token counting").
* :class:`TiktokenCounter` -- exact OpenAI encodings (``cl100k_base`` ...). Works offline with the tiktoken cache that
  ``llama-index-core`` bundles (found on ``sys.path`` without importing LlamaIndex) or ``$TIKTOKEN_CACHE_DIR``.
* :class:`HFTokenCounter` -- wraps anything with ``encode(text)`` (a transformers tokenizer, ``LocalLM``).

Examples:
    >>> count = make_token_counter("regex")
    >>> count("The Regulator may impose a fine.")
    8
    >>> make_token_counter(len)("abc")
    3
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from retrievekit.core.errors import InvalidInputError, MissingDependencyError

__all__ = [
    "HFTokenCounter",
    "RegexTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "bundled_tiktoken_cache",
    "make_token_counter",
]


@runtime_checkable
class TokenCounter(Protocol):
    """Anything callable as ``counter(text) -> int``.

    Examples:
        >>> isinstance(RegexTokenCounter(), TokenCounter)
        True
    """

    def __call__(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


_PIECE_RE = re.compile(r"[^\W\d_]+|\d{1,3}|[^\s\w]|_", re.UNICODE)


class RegexTokenCounter:
    """Deterministic word-piece estimate (see the module docstring for the rule and its calibration).

    Examples:
        >>> RegexTokenCounter()("Anti-Money Laundering 2023")
        7
        >>> RegexTokenCounter()("")
        0
    """

    name = "regex"

    def __call__(self, text: str) -> int:
        n = 0
        for m in _PIECE_RE.finditer(text):
            w = m.group(0)
            if len(w) > 6 and w[0].isalpha():
                n += 1 + (len(w) - 3) // 5
            else:
                n += 1
        return n

    def __repr__(self) -> str:
        return "RegexTokenCounter()"


def bundled_tiktoken_cache() -> Path | None:
    """The tiktoken cache folder shipped inside ``llama-index-core`` (found on ``sys.path``, nothing imported).

    Examples:
        >>> p = bundled_tiktoken_cache()
        >>> p is None or p.name == "tiktoken_cache"
        True
    """
    for entry in sys.path:
        cand = Path(entry or ".") / "llama_index" / "core" / "_static" / "tiktoken_cache"
        if cand.is_dir():
            return cand
    return None


class TiktokenCounter:
    """Exact token counts with a tiktoken encoding, offline.

    Raises :class:`MissingDependencyError` when tiktoken is not installed and ``InvalidInputError`` when the
    encoding's file is neither cached nor downloadable (no network is ever needed when llama-index-core is installed).

    Examples:
        >>> TiktokenCounter("cl100k_base")("hello world")
        2
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        try:
            import tiktoken
        except ImportError as e:
            raise MissingDependencyError(
                "tiktoken", "pip install tiktoken (or llama-index-core, which bundles it)"
            ) from e
        cache = bundled_tiktoken_cache()
        set_env = "TIKTOKEN_CACHE_DIR" not in os.environ and cache is not None
        if set_env:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
        try:
            self._enc: Any = tiktoken.get_encoding(encoding)
        except Exception as e:
            raise InvalidInputError(
                f"tiktoken encoding {encoding!r} is not available offline ({type(e).__name__}: {e}); "
                "install llama-index-core (bundles cl100k_base) or use the 'regex' counter"
            ) from e
        finally:
            if set_env:
                del os.environ["TIKTOKEN_CACHE_DIR"]
        self.name = f"tiktoken:{encoding}"

    def __call__(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.name.split(':', 1)[1]!r})"


class HFTokenCounter:
    """Count with any tokenizer exposing ``encode(text)`` (special tokens are not added when the API allows).

    Examples:
        >>> class Chars:
        ...     def encode(self, text, add_special_tokens=False):
        ...         return list(text)
        >>> HFTokenCounter(Chars())("abc")
        3
    """

    def __init__(self, tokenizer: Any) -> None:
        if not callable(getattr(tokenizer, "encode", None)):
            raise InvalidInputError(f"tokenizer must have an encode(text) method, got {type(tokenizer).__name__}")
        self.tokenizer = tokenizer
        self.name = f"hf:{type(tokenizer).__name__}"

    def __call__(self, text: str) -> int:
        try:
            return len(self.tokenizer.encode(text, add_special_tokens=False))
        except TypeError:
            return len(self.tokenizer.encode(text))

    def __repr__(self) -> str:
        return f"HFTokenCounter({type(self.tokenizer).__name__})"


def make_token_counter(spec: str | Callable[[str], int] | Any = "regex") -> Callable[[str], int]:
    """Build a counter from ``"regex"``, ``"tiktoken"`` / ``"tiktoken:<encoding>"``, a callable, or a tokenizer.

    Examples:
        >>> make_token_counter("regex")("one two")
        2
        >>> make_token_counter("nope")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown token counter 'nope'; use 'regex', 'tiktoken[:encoding]', a callable or a tokenizer with encode()
    """
    if isinstance(spec, str):
        if spec == "regex":
            return RegexTokenCounter()
        if spec == "tiktoken" or spec.startswith("tiktoken:"):
            return TiktokenCounter(spec.partition(":")[2] or "cl100k_base")
        raise InvalidInputError(
            f"unknown token counter {spec!r}; use 'regex', 'tiktoken[:encoding]', a callable or a tokenizer with encode()"
        )
    if callable(getattr(spec, "encode", None)):
        return HFTokenCounter(spec)
    if callable(spec):
        return spec
    raise InvalidInputError(f"cannot count tokens with {type(spec).__name__}")
