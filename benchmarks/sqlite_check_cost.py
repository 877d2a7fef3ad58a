"""What checking a dense folder's SQLite database costs per ``DenseIndex.open``: ``PRAGMA quick_check`` (before)
beside ``PRAGMA integrity_check`` (now, which also finds an index page whose entries no longer match their rows),
and the whole open, on a Chroma database of N objects (vectors from a hashing embedder: no model needed).

    python benchmarks/sqlite_check_cost.py --n 5183 --repeat 5
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.types import Passage


class HashEmbedder:
    """384-d unit vectors from a hash of the text (deterministic; quality is not the point here)."""

    name = "hash-384"
    dim = 384

    def _vec(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)


def _seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _pragma(db: Path, name: str) -> None:
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        con.execute(f"PRAGMA {name}").fetchall()
    finally:
        con.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=5183, help="objects (default: SciFact's 5,183 abstracts)")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    folder = Path(tempfile.mkdtemp()) / "dense"
    docs = [Passage(id=f"d{i}", text=f"passage {i} " + "word " * (i % 50)) for i in range(args.n)]
    emb = HashEmbedder()
    DenseIndex.build(docs, path=folder, embedder=emb).close()
    db = folder / "chroma" / "chroma.sqlite3"
    quick = _seconds(lambda: _pragma(db, "quick_check"), args.repeat)
    full = _seconds(lambda: _pragma(db, "integrity_check(1)"), args.repeat)
    opened = _seconds(lambda: DenseIndex.open(folder, embedder=emb).close(), args.repeat)
    mb = db.stat().st_size / 2**20
    print("| objects | chroma.sqlite3 | quick_check | integrity_check | whole open (integrity_check) |")
    print("|---|---|---|---|---|")
    print(f"| {args.n} | {mb:.1f} MiB | {1000 * quick:.1f} ms | {1000 * full:.1f} ms | {1000 * opened:.0f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
