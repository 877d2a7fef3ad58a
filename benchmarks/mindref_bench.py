"""MindRef quality on SciFact / HotpotQA with a local LM, with the "real title / exact span" check on every query.

Prints numbers; asserts nothing about speed. Examples (CPU, SmolLM2; the query limit keeps a run to minutes):

    python benchmarks/mindref_bench.py scifact --data-dir "$RETRIEVEKIT_DATA_DIR" --limit 12 --out runs/mindref-scifact.json
    python benchmarks/mindref_bench.py hotpotqa --data-dir "$RETRIEVEKIT_DATA_DIR" --stage1-only --limit 40 \
        --out runs/mindref-hotpot-stage1.json

A long run: ``--progress runs/x.jsonl`` (one line per query; a rerun resumes), ``--shard K/N`` (one process per
core on the same file; a last run without ``--shard`` aggregates), ``--diagnose`` (search vs model errors of stage 1).

``scifact`` reports Hit@1, Hit@5, MRR@5 and nDCG@10 of the full pipeline (document-level qrels);
``hotpotqa`` (split ``fullwiki``: ``hotpotqa_dev_fullwiki500``) reports gold-title recall@2 of stage 1.
``--option key=value`` sets any :class:`~retrievekit.core.generative.mindref.MindRefConfig` field.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from retrievekit.core.cli import parse_options
from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.eval.metrics import evaluate
from retrievekit.core.generative.mindref import MindRef, MindRefConfig
from retrievekit.core.llm.local import LocalLM
from retrievekit.core.trace import Trace


def main() -> None:
    """Run the benchmark (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", choices=["scifact", "hotpotqa"])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--split", default=None, help="default: dev (scifact), fullwiki (hotpotqa)")
    ap.add_argument("--limit", type=int, default=None, help="first N queries")
    ap.add_argument("--llm", default="smollm2", choices=["smollm2", "qwen0.5b"])
    ap.add_argument("--stage1-only", action="store_true", help="titles only (gold-title recall@2)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", default=None)
    ap.add_argument(
        "--diagnose",
        action="store_true",
        help="for each query whose gold documents were not recalled, score the gold titles: above the best recalled "
        "title is a search error (more beams would help), below it a model error (the LM prefers the wrong title)",
    )
    ap.add_argument(
        "--progress",
        default=None,
        metavar="JSONL",
        help="append one line per query here and, on a rerun with the same settings, skip the queries already in it",
    )
    ap.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="run only queries K, K+N, K+2N, ... (0-based), e.g. one process per core sharing one --progress file; "
        "a final run without --shard aggregates them",
    )
    args = ap.parse_args()
    shard_k, shard_n = _parse_shard(args.shard)

    split = args.split or ("dev" if args.dataset == "scifact" else "fullwiki")
    ds = load_dataset(args.dataset, args.data_dir, split=split, limit=args.limit)
    t0 = time.perf_counter()
    lm = LocalLM.load(args.llm)
    config = MindRefConfig.from_options(parse_options(args.option))
    mr = MindRef(ds.corpus, lm, config)
    build = time.perf_counter() - t0
    print(
        f"{ds.name}/{split}: {len(ds.corpus)} documents, {len(mr.trie)} distinct titles, "
        f"{mr.trie.num_nodes} trie nodes ({mr.trie.nbytes / 1e6:.1f} MB); build {build:.1f} s",
        flush=True,
    )

    settings = {
        "dataset": ds.name,
        "split": split,
        "llm": args.llm,
        "stage1_only": args.stage1_only,
        "diagnose": args.diagnose,
        "config": {k: v for k, v in vars(config).items()},
    }
    done = _read_progress(args.progress, settings)
    run: dict[str, list[str]] = {}
    seconds: list[float] = []
    title_recall: list[float] = []
    violations = {"title_not_real": 0, "passage_not_span": 0}
    calls = tokens = 0
    outcomes: dict[str, int] = {}
    for i, q in enumerate(ds.queries):
        if q.id in done:  # resumed: this query's line is already in --progress
            row = done[q.id]
            run[q.id] = row["ids"]
            seconds.append(row["seconds"])
            calls += row["llm_calls"]
            if row.get("stage1") is not None:
                outcomes[row["stage1"]] = outcomes.get(row["stage1"], 0) + 1
            tokens += row["completion_tokens"]
            for key in violations:
                violations[key] += row["violations"][key]
            if args.stage1_only:
                title_recall.append(
                    len(set(row["ids"][:2]) & set(ds.qrels.get(q.id, {}))) / max(len(ds.qrels.get(q.id, {})), 1)
                )
            continue
        if i % shard_n != shard_k:  # another shard's query (not in --progress yet): left out of this run's numbers
            continue
        before = dict(violations)
        trace = Trace()
        start = time.perf_counter()
        if args.stage1_only:
            titles = mr.recall_titles(q.text, trace=trace)
            ids = [mr.corpus[d].id for t in titles for d in t.documents]
            best_title = max((t.score for t in titles), default=float("-inf"))
            for t in titles:  # the check: every generated title is a real title of the corpus
                if any(mr.titles[d] != t.title for d in t.documents) or tuple(t.token_ids) not in mr.trie:
                    violations["title_not_real"] += 1
        else:
            hits = mr.search(q.text, k=10, trace=trace)
            ids = [h.id for h in hits]
            best_title = max((h.obj.metadata["title_score"] for h in hits), default=float("-inf"))
            for h in hits:  # the check: exact token span of the document, under a real title
                m = h.obj.metadata
                doc = mr.corpus[[o.id for o in mr.corpus].index(m["document_id"])]
                toks = mr.doc_tokens(mr.corpus.index(doc))
                span = [int(t) for t in toks[m["token_start"] : m["token_end"]]]
                if lm.decode(span).strip() != h.obj.text or h.obj.text not in doc.text:
                    violations["passage_not_span"] += 1
                if h.obj.title != mr.titles[mr.corpus.index(doc)]:
                    violations["title_not_real"] += 1
        seconds.append(time.perf_counter() - start)
        calls += trace.llm_calls
        tokens += trace.completion_tokens
        run[q.id] = ids
        gold = ds.qrels.get(q.id, {})
        outcome = _diagnose(mr, q.text, ids, gold, best_title) if args.diagnose else None
        if outcome is not None:
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if args.stage1_only:
            title_recall.append(len(set(ids[:2]) & set(gold)) / max(len(gold), 1))
        print(f"[{i + 1}/{len(ds.queries)}] {seconds[-1]:.1f}s  gold={list(gold)[:2]} got={ids[:3]}", flush=True)
        _append_progress(
            args.progress,
            settings,
            {
                "qid": q.id,
                "ids": ids,
                "seconds": seconds[-1],
                "llm_calls": trace.llm_calls,
                "completion_tokens": trace.completion_tokens,
                "stage1": outcome,
                "violations": {key: violations[key] - before[key] for key in violations},
            },
        )

    queries = [q for q in ds.queries if q.id in run]
    n = max(len(queries), 1)
    result: dict[str, object] = {
        "dataset": ds.name,
        "split": split,
        "llm": args.llm,
        "n_queries": len(queries),
        "all_queries": len(queries) == len(ds.queries),  # False for one --shard: aggregate with a final plain run
        "config": {k: v for k, v in vars(config).items() if not k.endswith("prompt")},
        "seconds_per_query": sum(seconds) / n,
        "llm_calls_per_query": calls / n,
        "completion_tokens_per_query": tokens / n,
        "violations": violations,
        "checks": mr.checks,
        "resumed_queries": sum(1 for q in queries if q.id in done),
    }
    if args.diagnose:
        result["stage1_outcomes"] = dict(sorted(outcomes.items()))
    if args.stage1_only:
        in_corpus = {o.id for o in ds.corpus}
        reachable = [sum(1 for g in ds.qrels.get(q.id, {}) if g in in_corpus) for q in queries]
        result["gold_title_recall@2"] = sum(title_recall) / n
        result["gold_titles_in_corpus_fraction"] = sum(reachable) / max(
            sum(len(ds.qrels.get(q.id, {})) for q in queries), 1
        )
    else:
        m = evaluate(run, {qid: ds.qrels[qid] for qid in run if qid in ds.qrels}, ks=(1, 5, 10))
        result["metrics"] = {key: m[key] for key in ("hit@1", "hit@5", "mrr@5", "ndcg@10", "recall@10")}
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def _parse_shard(text: str | None) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with ``0 <= K < N``; None -> ``(0, 1)`` (every query)."""
    if text is None:
        return 0, 1
    k, sep, n = text.partition("/")
    if not sep or not k.isdigit() or not n.isdigit() or not 0 <= int(k) < int(n):
        raise SystemExit(f"--shard expects K/N with 0 <= K < N, got {text!r}")
    return int(k), int(n)


def _diagnose(mr: MindRef, query: str, ids: list[str], gold: dict[str, int], best_title: float) -> str | None:
    """``hit`` (a gold document was recalled), ``search`` (a gold title outscores the best recalled one: beam
    search missed it), ``model`` (the LM scores every gold title below the recalled one), None without gold."""
    if not gold:
        return None
    if set(ids) & set(gold):
        return "hit"
    cfg = mr.config
    index = {o.id: i for i, o in enumerate(mr.corpus)}
    prompt = cfg.title_prompt.format(query=query)
    scores = []
    for doc_id in gold:
        if doc_id not in index:
            continue
        title_ids = [*mr.lm.encode(cfg.title_prefix + mr.titles[index[doc_id]]), mr.lm.eos_token_id]
        lps = mr.lm.token_logprobs(prompt, title_ids)  # the beam score: sum / n ** length_penalty, EOS included
        scores.append(sum(lps) / len(lps) ** cfg.length_penalty)
    return "search" if scores and max(scores) > best_title else "model"


def _read_progress(path: str | None, settings: dict[str, object]) -> dict[str, dict[str, Any]]:
    """Per-query rows of an earlier run with the same settings (first line); another run's file is refused."""
    if not path or not Path(path).exists():
        return {}
    text = Path(path).read_text(encoding="utf-8")
    if text and not text.endswith("\n"):  # a crash mid-line: drop the partial row, it is redone
        text = text[: text.rfind("\n") + 1]
        Path(path).write_text(text, encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    if lines[0] != {"settings": settings}:
        raise SystemExit(f"{path} was written by a run with other settings; pass another --progress file")
    return {row["qid"]: row for row in lines[1:]}


def _append_progress(path: str | None, settings: dict[str, object], row: dict[str, Any]) -> None:
    """Append one query's row (and the settings line first); a line is one write, flushed and synced."""
    if not path:
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="utf-8") as fh:
        if fh.tell() == 0:
            fh.write(json.dumps({"settings": settings}) + "\n")
        fh.write(json.dumps(row) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


if __name__ == "__main__":
    main()
