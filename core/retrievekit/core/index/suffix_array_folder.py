"""A corpus-wide suffix array written to a folder shard by shard as its documents stream past, and opened mapped.

:func:`write_suffix_array` reads token-id documents from any iterable (a generator over a JSONL file, a dataset
loader), one at a time: it gathers them into a shard of at most ``shard_tokens`` tokens
(:func:`~retrievekit.core.index.suffix_array.shard_batches`), sorts the shard
(:class:`~retrievekit.core.index.suffix_array.TokenSuffixArray`), writes its arrays and lets it go, so a build holds
one shard, never the corpus. The corpus's distinct token pairs and runs of three tokens (one table each for all
shards, answering one- and two-token prefixes) grow as the shards pass. :func:`open_suffix_array` opens the folder
as a :class:`~retrievekit.core.index.suffix_array.ShardedTokenSuffixArray` that reads its files as it searches:
opening reads the files' headers and the documents' lengths. Each shard's text and suffix array (nearly all of the
folder) are :class:`~retrievekit.core.index.pread_array.PreadArray` s: a lookup's binary searches copy the few bytes
they compare into the process with ``pread``, and the files' pages stay in the kernel's page cache, out of the
process's resident set (a memory mapping would count each touched page there, and recent Linux kernels map a whole
large page-cache folio per touch: scattered probes soon map most of the file). The two tables are read the same
way; each shard's small arrays are memory-mapped read-only. It answers what the same documents given to
``ShardedTokenSuffixArray(documents, shard_tokens=...)`` answer.

Layout (format ``sharded_suffix_array``, version 1): ``after1.npy`` and ``after2.npy`` (the runs of two and three
tokens, ``int64`` codes; the second absent for token ids too large for its codes), then per shard a
folder ``shard-00000/`` with ``text.npy`` (each token id + 1, a 0 after each document), ``sa.npy`` (the suffix
array), ``lengths.npy`` (the documents' lengths), ``stored.npy`` and ``starts.npy`` (the distinct stored tokens and
where each one's suffixes start). ``text.npy`` and ``sa.npy`` are ``int32`` where their values fit (8 bytes a token
on disk instead of 16), as the manifest records per shard. The folder is written beside its place and swapped in
whole (a crash leaves the folder that was there); opening verifies its checksums first (one read of every file).

Examples:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "sa"
    >>> _ = write_suffix_array(folder, iter([[5, 6, 7], [6, 8], [6, 7]]), shard_tokens=4)
    >>> sa = open_suffix_array(folder)
    >>> sa.num_shards, sa.allowed([6]), sa.locate([6, 7])
    (2, [7, 8], [(0, 1), (2, 0)])
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.bigram_followers import Followers
from retrievekit.core.index.mapped import open_arrays, save_arrays
from retrievekit.core.index.pread_array import PreadArray
from retrievekit.core.index.store import atomic_folder, read_manifest, write_manifest
from retrievekit.core.index.suffix_array import (
    DEFAULT_MAX_TOKENS,
    ShardedTokenSuffixArray,
    TokenSuffixArray,
    shard_batches,
)

__all__ = ["open_suffix_array", "write_suffix_array"]

_FORMAT = "sharded_suffix_array"
_VERSION = 1
_DTYPES = ("int32", "int64")


def _narrow(array: np.ndarray) -> np.ndarray:
    """``array`` as ``int32`` when its values fit (they are never negative), else as it is."""
    return array.astype(np.int32) if int(array.max(initial=0)) <= np.iinfo(np.int32).max else array


def _write_shard(
    folder: Path, batch: list[np.ndarray], eos_token_id: int | None, tables: list[Followers] | None
) -> tuple[dict[str, Any], list[Followers]]:
    """Sort one shard, write its arrays into ``folder``; its manifest row and ``tables`` with its runs added."""
    held = max(1, sum(int(d.size) for d in batch))
    sa = TokenSuffixArray(batch, eos_token_id=eos_token_id, max_tokens=held, followers=False)
    tables = Followers.grown(tables, sa._text)
    text, order = _narrow(sa._text), _narrow(sa._sa)
    folder.mkdir()
    save_arrays(folder, {"text": text, "sa": order, "lengths": sa._doc_len, "stored": sa._stored, "starts": sa._starts})
    row = {"documents": len(batch), "size": int(text.size), "text": str(text.dtype), "sa": str(order.dtype)}
    return row, tables


def write_suffix_array(
    folder: str | os.PathLike[str],
    documents: Iterable[Sequence[int] | np.ndarray],
    *,
    shard_tokens: int = DEFAULT_MAX_TOKENS,
    eos_token_id: int | None = None,
) -> Path:
    """Build the suffix array of ``documents`` (token-id sequences, read once, in order) into ``folder``, one shard
    of at most ``shard_tokens`` tokens at a time; returns the folder. Documents are numbered in the order read.

    Raises:
        InvalidInputError: ``shard_tokens`` below 1, or token ids that are not integers in ``[0, 2**31)`` (naming
            the document).
        SuffixArrayTooLargeError: a document longer than ``shard_tokens``.

    Examples:
        >>> import tempfile, pathlib
        >>> folder = write_suffix_array(pathlib.Path(tempfile.mkdtemp()) / "sa", ([i, i + 1] for i in range(3)))
        >>> open_suffix_array(folder).allowed([1])
        [2]
    """
    if isinstance(shard_tokens, bool) or not isinstance(shard_tokens, int) or shard_tokens < 1:
        raise InvalidInputError(f"shard_tokens must be a positive int, got {shard_tokens!r}")
    rows: list[dict[str, Any]] = []
    tables: list[Followers] | None = None
    with atomic_folder(folder) as tmp:
        for _, batch in shard_batches(documents, shard_tokens):
            row, tables = _write_shard(tmp / f"shard-{len(rows):05d}", batch, eos_token_id, tables)
            rows.append(row)
        kept = tables or []
        save_arrays(tmp, {f"after{t.order}": t.codes[:] for t in kept})
        fields = {"eos_token_id": eos_token_id, "shard_tokens": shard_tokens, "shards": rows, "base": kept[0].base}
        fields["orders"] = len(kept)
        write_manifest(tmp, _FORMAT, _VERSION, fields)
    return Path(folder)


def _open_shard(path: Path, row: dict[str, Any], eos_token_id: int | None, mapped: bool) -> TokenSuffixArray:
    """One shard's arrays (its text and suffix array read with ``pread``, or mapped with the rest when ``mapped``; the
    rest mapped read-only), checked against its manifest row (reads only the documents' lengths)."""
    if row.get("text") not in _DTYPES or row.get("sa") not in _DTYPES:
        raise IndexFormatError(
            f"{path} is corrupt: its manifest row names dtypes {row.get('text')!r}, {row.get('sa')!r}"
        )
    dtypes = {"lengths": np.int64, "stored": np.int64, "starts": np.int64}
    wanted = {**dtypes, "text": row["text"], "sa": row["sa"]} if mapped else dtypes
    arrays: dict[str, Any] = open_arrays(path, wanted, mode="r")
    if not mapped:  # the large ones: read with pread, never mapped (see the module docstring)
        arrays.update({name: PreadArray.open(path / f"{name}.npy", row[name]) for name in ("text", "sa")})
    text, lengths = arrays["text"], arrays["lengths"]
    ok = lengths.size == row["documents"] and text.size == row["size"] == arrays["sa"].size
    ok = ok and bool((lengths >= 0).all()) and max(1, int(lengths.sum()) + lengths.size) == text.size
    if not ok or arrays["starts"].size != arrays["stored"].size + 1:
        raise IndexFormatError(f"{path} is corrupt: its arrays' sizes do not agree with the manifest")
    parts = (text, arrays["sa"], lengths, arrays["stored"], arrays["starts"])
    held = max(1, text.size - lengths.size)
    return TokenSuffixArray._of_arrays(parts, None, eos_token_id=eos_token_id, max_tokens=held)


def open_suffix_array(folder: str | os.PathLike[str], *, mapped: bool = False) -> ShardedTokenSuffixArray:
    """Open a folder written by :func:`write_suffix_array` (checksums checked first), its shards' text and suffix
    arrays and the two tables read with ``pread`` as lookups ask, the rest memory-mapped read-only (the module
    docstring);
    :class:`IndexFormatError` for a missing, foreign, damaged or too new folder.

    ``mapped=True`` maps the text and suffix arrays and the tables too: lookups run about twice as fast, and the process's resident
    set grows with the pages they touch, up to the folder's size (the "Scale" section of the benchmarks page has both).

    Examples:
        >>> import tempfile
        >>> open_suffix_array(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... is not a retrievekit index folder (no manifest.json)
    """
    root = Path(folder)
    m = read_manifest(root, _FORMAT, _VERSION)
    try:
        eos, rows, base, orders = m["eos_token_id"], list(m["shards"]), int(m["base"]), int(m["orders"])
        if eos is not None and (isinstance(eos, bool) or not isinstance(eos, int)):
            raise ValueError(f"eos_token_id {eos!r}")
        if orders not in (1, 2) or not Followers.fits(base, orders):
            raise ValueError(f"orders {orders} of base {base}")
        shards = [_open_shard(root / f"shard-{i:05d}", dict(row), eos, mapped) for i, row in enumerate(rows)]
    except (KeyError, TypeError, ValueError) as e:
        raise IndexFormatError(f"{root} is corrupt: {type(e).__name__}: {e}") from e
    if not shards:
        raise IndexFormatError(f"{root} is corrupt: its manifest lists no shard")
    names = [f"after{k}" for k in range(1, orders + 1)]
    codes: dict[str, Any] = (
        open_arrays(root, dict.fromkeys(names, np.int64), mode="r")
        if mapped
        else {name: PreadArray.open(root / f"{name}.npy", np.int64) for name in names}  # read per lookup, unmapped
    )
    tables = [Followers(codes[name], base, k) for k, name in enumerate(names, start=1)]
    return ShardedTokenSuffixArray._of_shards(shards, tables, eos_token_id=eos)
