"""Iterative agent vs one-shot top-5 on HotpotQA (distractor) and MuSiQue (dev), with the same local model.

For each question:

  (a) one-shot top-5   the base retriever's top ``--top-k`` for the question, then one answer call
                       (the agent's answer prompt, same model)
  (b) agent            ``build_iterative_agent`` (chunk_search top-``--top-k``, turn-1 fallback search,
                       chunk_delete, at most ``--max-turns`` turns, then the answer node)

Reported per method: supporting-passage recall (|context ∩ gold| / |gold|, the final context for the agent),
answer EM / F1 (SQuAD normalisation, best over aliases), searches (retrieval calls) per question, context tokens
(len/4 of title + text) and LLM calls / seconds per question.

Run (from the repo root; CPU, ~1-3 min per question for the agent on a shared 2-core machine):

    python benchmarks/iterative_multihop.py --data-dir "$RETRIEVEKIT_DATA_DIR" --limit 6 --max-turns 2 \
        --out runs/iterative_multihop.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from langchain_core.messages import HumanMessage, SystemMessage  # noqa: E402

from retrievekit.core.eval.datasets import load_dataset  # noqa: E402
from retrievekit.core.index import baselines  # noqa: E402
from retrievekit.core.iterative import (  # noqa: E402
    answer_messages,
    answer_scores,
    chunk_from_hit,
    context_tokens,
    render_working_set,
)
from retrievekit.core.llm import LocalLM  # noqa: E402
from retrievekit.core.retriever import MethodContext  # noqa: E402
from retrievekit.langchain.local_chat import LocalToolChatModel  # noqa: E402
from retrievekit.langgraph import build_iterative_agent, run_agent  # noqa: E402

DATASETS = (("hotpotqa", "distractor"), ("musique", "dev"))


def golds_of(meta: dict[str, Any]) -> list[str]:
    return [str(meta.get("answer", ""))] + [str(a) for a in meta.get("answer_aliases") or []]


def recall(ids: list[str], gold: dict[str, int]) -> float:
    rel = {d for d, g in gold.items() if g > 0}
    return len(rel & set(ids)) / len(rel) if rel else 0.0


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def run_dataset(name: str, split: str, args: argparse.Namespace, lm: LocalLM) -> dict[str, Any]:
    ds = load_dataset(name, args.data_dir, split=split, limit=args.limit)
    ctx = MethodContext(corpus=ds.corpus, work_dir=Path(args.work_dir) if args.work_dir else None)
    base = {"bm25": baselines.build_bm25, "hybrid": baselines.build_hybrid}[args.base](ctx)
    chat = LocalToolChatModel(lm=lm, max_tokens=args.max_tokens, answer_max_tokens=args.answer_max_tokens)
    agent = build_iterative_agent(chat, base, max_turns=args.max_turns, search_top_k=args.top_k)
    rows: dict[str, list[dict[str, float]]] = {"oneshot_top5": [], "agent": []}
    stops: dict[str, int] = {}
    for i, q in enumerate(ds.queries):
        golds, gold = golds_of(dict(q.metadata)), ds.qrels.get(q.id, {})
        # (a) one-shot top-k + one answer call
        t0 = time.perf_counter()
        chunks = [chunk_from_hit(h, query=q.text, turn=0) for h in base.search(q.text, args.top_k)]
        prompt = [
            SystemMessage(c) if r == "system" else HumanMessage(c)
            for r, c in answer_messages(q.text, render_working_set(chunks))
        ]
        answer = chat.invoke(prompt).text.strip()
        rows["oneshot_top5"].append(
            {
                "recall": recall([c["id"] for c in chunks], gold),
                **answer_scores(answer, golds),
                "searches": 1.0,
                "context_tokens": float(context_tokens(chunks)),
                "llm_calls": 1.0,
                "seconds": time.perf_counter() - t0,
            }
        )
        # (b) the agent
        t0 = time.perf_counter()
        run = run_agent(agent, q.text)
        c = run.trace.counters
        rows["agent"].append(
            {
                "recall": recall([ch["id"] for ch in run.working_set], gold),
                **answer_scores(run.answer, golds),
                "searches": float(c["retrieval_calls"]),
                "context_tokens": float(c["context_tokens"]),
                "llm_calls": float(run.trace.llm_calls),
                "seconds": time.perf_counter() - t0,
            }
        )
        stops[str(run.stop_reason)] = stops.get(str(run.stop_reason), 0) + 1
        print(
            f"[{name} {i + 1}/{len(ds.queries)}] gold={golds[0]!r} oneshot={answer[:60]!r} agent={str(run.answer)[:60]!r} "
            f"R1={rows['oneshot_top5'][-1]['recall']:.2f} R2={rows['agent'][-1]['recall']:.2f} "
            f"searches={c['retrieval_calls']} stop={run.stop_reason}",
            flush=True,
        )
    summary = {m: {k: mean([r[k] for r in rs]) for k in rs[0]} for m, rs in rows.items()}
    return {"dataset": name, "split": split, "n_questions": len(ds.queries), "summary": summary, "agent_stops": stops}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--limit", type=int, default=None, help="first N questions per dataset (default: all 70)")
    p.add_argument("--llm", default="smollm2", choices=("smollm2", "qwen0.5b"))
    p.add_argument("--base", default="bm25", choices=("bm25", "hybrid"))
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--max-turns", type=int, default=5)
    p.add_argument("--max-tokens", type=int, default=96)
    p.add_argument("--answer-max-tokens", type=int, default=24)
    p.add_argument("--work-dir", default=None)
    p.add_argument("--datasets", nargs="+", default=[d for d, _ in DATASETS])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    lm = LocalLM.load(args.llm)
    results = []
    for name, split in DATASETS:
        if name in args.datasets:
            results.append(run_dataset(name, split, args, lm))
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps({"args": vars(args), "results": results}, indent=2))
    lines = [
        "| dataset | method | n | recall | EM | F1 | searches/q | context tokens | LLM calls/q | s/q |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for m, s in r["summary"].items():
            lines.append(
                f"| {r['dataset']} | {m} | {r['n_questions']} | {s['recall']:.3f} | {s['em']:.3f} | {s['f1']:.3f} | "
                f"{s['searches']:.2f} | {s['context_tokens']:.0f} | {s['llm_calls']:.2f} | {s['seconds']:.1f} |"
            )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
