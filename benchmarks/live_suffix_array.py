"""MindRef's structures changed in place: ms per added and per deleted document, against a fresh build (issue #61).

On ``benchmarks/scale.py``'s corpus at ``--sizes`` documents (SciFact's abstracts, then generated ones of the same
length), token ids being words hashed into a 50,000-id vocabulary (``scale.token_ids``), so the structure, not a
tokenizer, is what is timed:

* ``suffix_array``: :class:`LiveTokenSuffixArray` over every document's token ids (``--shard-tokens``, 65,536 by
  default): its build; 100 documents added one call each and 100 deleted one call each (the cost of one change);
  100 added in one call and 100 deleted in one call (a batch); then the ms per query of allowed-next-token lookups
  for each 1-3 token window of 20 documents' first 16 tokens, beside one :class:`TokenSuffixArray` over the same
  documents (what the shards cost a query).
* ``title_trie``: a keyed :class:`TokenTrie` of every document's title (MindRef's title trie, one id a title):
  the same changes, each followed by one lookup (a change of more than 64 titles, as the batch of 100 here, is
  applied by a rebuild at the next query, so that lookup is part of the change's cost).

Times are wall ms (``time.perf_counter``) on a shared machine; the load average is recorded with each row.

    python benchmarks/live_suffix_array.py --data-dir "$RETRIEVEKIT_DATA_DIR" --sizes 10000 \\
        --records benchmarks/records/live_suffix_array/rows.jsonl

Each finished row is a line of ``--records``; a rerun skips the rows recorded there and prints them all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _records import keep_row, recorded_rows  # noqa: E402

CHANGES = 100


def _ms_each(calls: list[Callable[[], Any]]) -> float:
    start = time.perf_counter()
    for call in calls:
        call()
    return 1000 * (time.perf_counter() - start) / len(calls)


def _suffix_array(docs: dict[str, np.ndarray], extra: dict[str, np.ndarray], shard_tokens: int) -> dict[str, Any]:
    from retrievekit.core.index.live_suffix_array import LiveTokenSuffixArray
    from retrievekit.core.index.suffix_array import TokenSuffixArray

    start = time.perf_counter()
    sa = LiveTokenSuffixArray(docs, shard_tokens=shard_tokens)
    build_s = time.perf_counter() - start
    items = list(extra.items())
    add_one = _ms_each([lambda k=k, v=v: sa.add({k: v}) for k, v in items])
    delete_one = _ms_each([lambda k=k: sa.delete([k]) for k, _ in items])
    start = time.perf_counter()
    sa.add(extra)
    add_batch = 1000 * (time.perf_counter() - start) / len(extra)
    start = time.perf_counter()
    sa.delete(list(extra))
    delete_batch = 1000 * (time.perf_counter() - start) / len(extra)
    firsts = [d[:16] for d in list(docs.values())[:20]]
    windows = [tuple(int(t) for t in f[j : j + w]) for f in firsts for w in (1, 2, 3) for j in range(len(f) - w + 1)]
    one = TokenSuffixArray(list(docs.values()))
    live_ms = _ms_each([lambda: [sa.allowed(p) for p in windows]]) / len(firsts)
    one_ms = _ms_each([lambda: [one.allowed(p) for p in windows]]) / len(firsts)
    return {
        "build_s": round(build_s, 2),
        "shards": sa.num_shards,
        "tokens": sa.num_tokens,
        "ms_per_added_one_call_each": round(add_one, 2),
        "ms_per_deleted_one_call_each": round(delete_one, 2),
        "ms_per_added_in_one_batch": round(add_batch, 3),
        "ms_per_deleted_in_one_batch": round(delete_batch, 3),
        "query_ms_shards": round(live_ms, 3),
        "query_ms_one_array": round(one_ms, 3),
    }


def _title_trie(titles: dict[str, list[int]], extra: dict[str, list[int]]) -> dict[str, Any]:
    from retrievekit.core.index.token_trie import TokenTrie

    start = time.perf_counter()
    trie = TokenTrie.keyed(titles)
    trie.allowed([])  # the arrays are built at the first query: part of the build
    build_s = time.perf_counter() - start
    items = list(extra.items())
    add_one = _ms_each([lambda k=k, v=v: (trie.add({k: v}), trie.allowed([])) for k, v in items])
    delete_one = _ms_each([lambda k=k: (trie.delete([k]), trie.allowed([])) for k, _ in items])
    start = time.perf_counter()
    trie.add(extra)
    trie.allowed([])
    add_batch = 1000 * (time.perf_counter() - start) / len(extra)
    return {
        "build_s": round(build_s, 3),
        "ms_per_added_one_call_each": round(add_one, 2),
        "ms_per_deleted_one_call_each": round(delete_one, 2),
        "ms_per_added_in_one_batch": round(add_batch, 3),
    }


def _row(structure: str, data_dir: str, n: int, shard_tokens: int) -> dict[str, Any]:
    from scale import scale_corpus, token_ids

    corpus = scale_corpus(data_dir, n + CHANGES)
    if structure == "suffix_array":
        docs = {o.id: np.asarray(token_ids(o.text), dtype=np.int64) for o in corpus}
        ids = list(docs)
        base, extra = {k: docs[k] for k in ids[:n]}, {k: docs[k] for k in ids[n:]}
        row = _suffix_array(base, extra, shard_tokens)
    else:
        titles = {o.id: token_ids(o.title) or [1] for o in corpus}
        ids = list(titles)
        row = _title_trie({k: titles[k] for k in ids[:n]}, {k: titles[k] for k in ids[n:]})
    return {"structure": structure, "documents": n, "shard_tokens": shard_tokens, **row}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=os.environ.get("RETRIEVEKIT_DATA_DIR"))
    parser.add_argument("--structures", nargs="+", default=["suffix_array", "title_trie"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000])
    parser.add_argument("--shard-tokens", type=int, default=1 << 16)
    parser.add_argument("--records", type=Path)
    args = parser.parse_args(argv)
    rows = recorded_rows(args.records)
    done = {(r["structure"], r["documents"], r["shard_tokens"]) for r in rows}
    for n in args.sizes:
        for structure in args.structures:
            if (structure, n, args.shard_tokens) in done:
                continue
            rows.append(keep_row(_row(structure, args.data_dir, n, args.shard_tokens), args.records))
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
