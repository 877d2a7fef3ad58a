"""What opening a saved index costs: open milliseconds and the opening process's peak RSS, before and after
memory-mapping (issue #63, item 3).

For each structure, built once at ``--n`` documents of ``benchmarks/scale.py``'s corpus (SciFact's abstracts, then
generated ones; token ids are words hashed into 50,000 ids, vectors :class:`HashedWords`):

* ``trie``: MindRef's title trie (:class:`TokenTrie` over every title's token ids);
* ``suffix_array``: :class:`LiveTokenSuffixArray` over every document's token ids (shards of 65,536 tokens);
* ``lattice_tree``: LATTICE's bottom-up tree with extractive summaries (M = 10) and its node vectors.

each is saved in today's format (``v2``: arrays in ``.npy`` files, memory-mapped on open; the tree's ``v3``: its
objects read per hit through ``object_offsets.npy``, its leaves' lines in ``nodes.jsonl`` without their texts, read
from the objects when a search shows them; the tree's ``v4``: its nodes as memory-mapped arrays, each read when a
search asks for it) and in the formats before it, which retrievekit still opens (``v1``:
``trie.npz``; ``tokens.npy`` + ``lengths.npy``, whose shards are sorted again on open; ``embeddings.npz`` and the
objects read whole; the tree's ``v2``: as ``v3`` with each leaf's text in its line, held in memory once opened).
Then a fresh process per (structure, format) opens the folder
and runs the same lookups (200 seeded titles' allowed-next steps; the 1-3 token windows of 20 SciFact dev claims;
5 LATTICE searches with a word-overlap judge, then the vectors of their hits), and reports ``open_ms`` (the load, checksums included),
``checksum_ms`` (hashing the folder's files again, the part of ``open_ms`` that verifying costs), ``lookup_ms``,
``peak_rss_mb`` (``VmHWM`` of ``/proc/self/status`` after the lookups; ``ru_maxrss`` is inherited across exec and
misleads; ``open_rss_mb`` and ``open_file_mb``: the peak and the file pages right after opening, before the
lookups), what is resident then as the process's own memory (``rss_anon_mb``) and as pages of files
(``rss_file_mb``: mapped index files, and the libraries; the page cache's, shared, and dropped under memory
pressure), ``base_rss_mb`` (``VmHWM`` after the imports, before opening), ``disk_mb`` and a digest of the answers
(the same for every format, or the run fails). The files were just written, so they are in the page cache: a warm
open. Each finished row is a line of ``--records``; a rerun skips the rows recorded for the same ``n``.

    nice -n 10 python benchmarks/open_memory.py --data-dir "$RETRIEVEKIT_DATA_DIR" --n 100000 \\
        --records benchmarks/records/open_memory/rows.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import HashedWords, OverlapJudge, scale_corpus, token_ids  # noqa: E402

STRUCTURES = ("trie", "suffix_array", "lattice_tree")
FORMATS = {"trie": ("v1", "v2"), "suffix_array": ("v1", "v2"), "lattice_tree": ("v1", "v2", "v3", "v4")}  # today's last
_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def status_mb(field: str = "VmHWM") -> float:
    """A memory field of ``/proc/self/status`` (``VmHWM``: this process's peak resident set), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def _reseal(folder: Path, fmt: str, version: int, drop: list[str]) -> None:
    """Seal ``folder`` again as ``fmt`` version ``version`` with its manifest's fields, without ``drop``."""
    from retrievekit.core.index.store import write_manifest

    data = json.loads((folder / "manifest.json").read_text())
    for name in drop:
        (folder / name).unlink()
    keep = {k: v for k, v in data.items() if k not in {"format", "format_version", "retrievekit_version", "checksums"}}
    write_manifest(folder, fmt, version, keep)


def _copy(src: Path, dst: Path) -> None:
    import shutil

    shutil.copytree(src, dst)


def old_trie(v2: Path, v1: Path) -> None:
    """The trie at ``v2`` as format version 1 (one ``trie.npz``) at ``v1``."""
    _copy(v2, v1)
    names = ("start", "child_tok", "child_node", "terminal")
    with open(v1 / "trie.npz", "wb") as f:
        np.savez(f, **{n: np.load(v1 / f"{n}.npy") for n in names})
    _reseal(v1, "token_trie", 1, [f"{n}.npy" for n in names])


def old_suffix_array(v2: Path, v1: Path, docs: list[np.ndarray]) -> None:
    """The suffix array at ``v2`` as format version 1 (``tokens.npy``, ``lengths.npy``) at ``v1``."""
    _copy(v2, v1)
    np.save(v1 / "tokens.npy", np.concatenate(docs))
    names = ("text", "sa", "stored", "starts", "followers", "shards")
    _reseal(v1, "live_suffix_array", 1, [f"{n}.npy" for n in names])


def tree_v3(v4: Path, v3: Path) -> None:
    """The tree at ``v4`` as format version 3 (its nodes as ``nodes.jsonl`` lines, a leaf's without the text its
    object gives; its vectors named in ``vector_ids.json``) at ``v3``."""
    from retrievekit.core.lattice.node_arrays import open_node_arrays
    from retrievekit.core.lattice.tree import SemanticTree

    _copy(v4, v3)
    tree, stored = SemanticTree.load(v4), open_node_arrays(v4)
    with open(v3 / "nodes.jsonl", "w", encoding="utf-8") as out:
        for node in tree.iter_nodes():
            out.write(json.dumps(tree.node_line(node), ensure_ascii=False) + "\n")
    rows = np.load(v4 / "vector_rows.npy")
    (v3 / "vector_ids.json").write_text(json.dumps([stored.ids[int(r)] for r in rows]), encoding="utf-8")
    arrays = [p.name for p in v3.glob("*.npy") if p.name not in ("vectors.npy", "object_offsets.npy")]
    _reseal(v3, "lattice_tree", 3, arrays)


def tree_v2(v3: Path, v2: Path) -> None:
    """The tree at ``v3`` as format version 2 (each leaf's text, its object's index text, in its node line) at
    ``v2``."""
    from retrievekit.core.types import object_from_dict

    _copy(v3, v2)
    with open(v2 / "objects.jsonl", encoding="utf-8") as f:
        texts = {o.id: o.index_text() for o in (object_from_dict(json.loads(line)) for line in f)}
    with open(v3 / "nodes.jsonl", encoding="utf-8") as f, open(v2 / "nodes.jsonl", "w", encoding="utf-8") as out:
        for line in f:
            d = json.loads(line)
            if d["leaf"]:
                d = {"id": d["id"], "text": texts[d["id"]], **{k: v for k, v in d.items() if k != "id"}}
            out.write(json.dumps(d, ensure_ascii=False) + "\n")
    _reseal(v2, "lattice_tree", 2, [])


def old_tree(v2: Path, v1: Path) -> None:
    """The tree at ``v2`` as format version 1 (``embeddings.npz``, and no ``object_offsets.npy``: the objects read
    whole) at ``v1``."""
    _copy(v2, v1)
    ids = json.loads((v1 / "vector_ids.json").read_text())
    with open(v1 / "embeddings.npz", "wb") as f:
        np.savez(f, ids=np.asarray(ids, dtype=str), vectors=np.load(v1 / "vectors.npy"))
    _reseal(v1, "lattice_tree", 1, ["vectors.npy", "vector_ids.json", "object_offsets.npy"])


def _probes(corpus: list[Any], claims: list[str]) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    titles = [token_ids(corpus[int(i)].title)[:8] for i in rng.integers(len(corpus), size=200)]
    windows = [
        ids[j : j + w] for ids in map(token_ids, claims[:20]) for w in (1, 2, 3) for j in range(len(ids) - w + 1)
    ]
    return {"trie": [t[:j] for t in titles for j in range(len(t) + 1)], "suffix_array": windows, "queries": claims[:5]}


def build(structure: str, data_dir: str, n: int, work: Path) -> None:
    """Build ``structure`` over ``n`` documents and save it as ``work/<structure>-<format>``, each of
    :data:`FORMATS`."""
    from retrievekit.core.eval.datasets import load_dataset

    corpus = scale_corpus(data_dir, n)
    claims = [q.text for q in load_dataset("scifact", data_dir, split="dev", limit=20).queries]
    (work / "probes.json").write_text(json.dumps(_probes(corpus, claims)))
    v2, v1 = work / f"{structure}-v2", work / f"{structure}-v1"
    if structure == "trie":
        from retrievekit.core.index.token_trie import TokenTrie

        titles = {tuple(token_ids(o.title)) or (i,) for i, o in enumerate(corpus)}
        TokenTrie(titles, eos_token_id=None).save(v2)
        old_trie(v2, v1)
    elif structure == "suffix_array":
        from retrievekit.core.index.live_suffix_array import LiveTokenSuffixArray

        docs = [np.asarray(token_ids(o.text), dtype=np.int64) for o in corpus]
        LiveTokenSuffixArray({o.id: d for o, d in zip(corpus, docs, strict=True)}).save(v2)
        old_suffix_array(v2, v1, docs)
    else:
        from retrievekit.core.lattice.bottom_up import build_bottom_up
        from retrievekit.core.lattice.config import TreeBuildConfig

        v4, v3 = work / f"{structure}-v4", work / f"{structure}-v3"
        build_bottom_up(corpus, None, HashedWords(), TreeBuildConfig(summaries="extractive")).save(v4)
        tree_v3(v4, v3)
        tree_v2(v3, v2)
        old_tree(v2, v1)


def _open(structure: str, folder: Path) -> Any:
    if structure == "trie":
        from retrievekit.core.index.token_trie import TokenTrie

        return TokenTrie.load(folder)
    if structure == "suffix_array":
        from retrievekit.core.index.live_suffix_array import LiveTokenSuffixArray

        return LiveTokenSuffixArray.load(folder)
    from retrievekit.core.lattice.tree import SemanticTree

    return SemanticTree.load(folder)


def _lookups(structure: str, index: Any, probes: dict[str, Any]) -> list[Any]:
    if structure in ("trie", "suffix_array"):
        return [index.allowed(p) for p in probes[structure]]
    from retrievekit.core.lattice import Lattice

    lattice = Lattice(index, OverlapJudge())
    out = [[h.id for h in lattice.search(q, k=10)] for q in probes["queries"]]
    hits = [i for ids in out for i in ids]  # the hits' vectors, as an insertion next to them would read them
    return [out, float(sum(float(np.asarray(index.embeddings[i]).sum()) for i in hits))]


def open_child(structure: str, folder: Path) -> dict[str, Any]:
    """In this (fresh) process: open ``folder``, run the lookups, report the row."""
    import retrievekit.core.lattice  # noqa: F401  (imports counted in the base, as for every structure)
    import retrievekit.core.lattice.tree  # noqa: F401
    from retrievekit.core.index.checksums import verify_checksums

    probes = json.loads((folder.parent / "probes.json").read_text())
    base = status_mb()
    started = time.perf_counter()
    index = _open(structure, folder)
    open_ms = 1000 * (time.perf_counter() - started)
    opened, opened_file = status_mb(), status_mb("RssFile")
    started = time.perf_counter()
    answers = _lookups(structure, index, probes)
    lookup_ms = 1000 * (time.perf_counter() - started)
    peak, anon, mapped = status_mb(), status_mb("RssAnon"), status_mb("RssFile")
    started = time.perf_counter()
    verify_checksums(folder, json.loads((folder / "manifest.json").read_text())["checksums"])
    checksum_ms = 1000 * (time.perf_counter() - started)
    disk = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
    return {
        "open_ms": round(open_ms, 1),
        "checksum_ms": round(checksum_ms, 1),
        "lookup_ms": round(lookup_ms, 1),
        "lookups": len(probes[structure]) if structure != "lattice_tree" else len(probes["queries"]),
        "base_rss_mb": base,
        "open_rss_mb": opened,
        "open_file_mb": opened_file,
        "peak_rss_mb": peak,
        "rss_anon_mb": anon,
        "rss_file_mb": mapped,
        "disk_mb": round(disk, 1),
        "answers_sha256": hashlib.sha256(json.dumps(answers).encode()).hexdigest()[:16],
    }


def _run(args: list[str]) -> dict[str, Any]:
    env = {**os.environ, **dict.fromkeys(_THREADS, "1")}
    out = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{args}: exit {out.returncode}\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}


def main(argv: list[str] | None = None) -> int:
    """Build, then open each structure in each of its formats in fresh processes; print and record the rows."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--structures", nargs="+", choices=STRUCTURES, default=list(STRUCTURES))
    p.add_argument("--records", type=Path, default=Path("benchmarks/records/open_memory/rows.jsonl"))
    p.add_argument("--work-dir", type=Path, default=None, help="where the folders are written (a temp dir)")
    p.add_argument("--build", choices=STRUCTURES, help=argparse.SUPPRESS)
    p.add_argument("--open", choices=STRUCTURES, help=argparse.SUPPRESS)
    p.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.build:
        build(a.build, a.data_dir, a.n, a.folder)
        return 0
    if a.open:
        print(json.dumps(open_child(a.open, a.folder)))
        return 0
    done = {(r["structure"], r["format"]) for r in _recorded(a.records) if r["n"] == a.n}
    work = a.work_dir or Path(tempfile.mkdtemp(prefix="open_memory."))
    work.mkdir(parents=True, exist_ok=True)
    for structure in a.structures:
        if {(structure, fmt) for fmt in FORMATS[structure]} <= done:
            continue
        _run(["--data-dir", a.data_dir, "--n", str(a.n), "--build", structure, "--folder", str(work)])
        rows = []
        for fmt in FORMATS[structure]:
            row = {"structure": structure, "format": fmt, "n": a.n}
            row.update(
                _run(["--data-dir", a.data_dir, "--open", structure, "--folder", str(work / f"{structure}-{fmt}")])
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
        if len({r["answers_sha256"] for r in rows}) > 1:
            raise SystemExit(f"{structure}: its formats answer differently")
        a.records.parent.mkdir(parents=True, exist_ok=True)
        with open(a.records, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    _table(_recorded(a.records))
    return 0


def _recorded(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _table(rows: list[dict[str, Any]]) -> None:
    cols = (
        "structure",
        "format",
        "n",
        "open_ms",
        "checksum_ms",
        "lookup_ms",
        "base_rss_mb",
        "open_rss_mb",
        "peak_rss_mb",
    )
    cols += ("rss_anon_mb", "rss_file_mb", "disk_mb")
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r.get(c, "")) for c in cols))


if __name__ == "__main__":
    raise SystemExit(main())
