"""Iterative agent vs one-shot top-5 on HotpotQA (distractor) and MuSiQue (dev), with the same local model.

For each question:

  (a) one-shot top-5   the base retriever's top ``--top-k`` for the question, then one answer call
                       (the agent's answer prompt, same model)
  (b) agent            ``build_iterative_agent`` (chunk_search top-``--top-k``, turn-1 fallback search,
                       chunk_delete, at most ``--max-turns`` turns, then the answer node)

Reported per method: supporting-passage recall (|context ∩ gold| / |gold|, the final context for the agent),
answer EM / F1 (SQuAD normalisation, best over aliases), searches (retrieval calls) per question, context tokens
(len/4 of title + text) and LLM calls / seconds per question.

A recipe over the benchmark harness (:func:`retrievekit.core.eval.runner.run_benchmark`): both methods are retrievers
whose returned set is the answer context (the harness's ``set_recall`` is the supporting-passage recall) and whose
answers are scored by a per-query hook; ``--records-dir`` keeps a resumable per-query file per dataset and method.

Run (from the repo root; CPU, ~20 s per question for the agent with one thread):

    python benchmarks/iterative_multihop.py --data-dir "$RETRIEVEKIT_DATA_DIR" --limit 6 --max-turns 2 \
        --out runs/iterative_multihop.json
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from langchain_core.messages import HumanMessage, SystemMessage  # noqa: E402

from retrievekit.core.eval.datasets import Query, load_dataset  # noqa: E402
from retrievekit.core.eval.runner import run_benchmark  # noqa: E402
from retrievekit.core.index import baselines  # noqa: E402
from retrievekit.core.iterative import (  # noqa: E402
    answer_messages,
    answer_scores,
    chunk_from_hit,
    context_tokens,
    render_working_set,
)
from retrievekit.core.llm import LocalLM  # noqa: E402
from retrievekit.core.registry import MethodContext  # noqa: E402
from retrievekit.core.retriever import Retriever  # noqa: E402
from retrievekit.core.storage import write_json_atomic  # noqa: E402
from retrievekit.core.trace import Trace  # noqa: E402
from retrievekit.core.types import ScoredHit  # noqa: E402
from retrievekit.langchain.local_chat import LocalToolChatModel  # noqa: E402
from retrievekit.langgraph import build_iterative_agent, run_agent  # noqa: E402

DATASETS = (("hotpotqa", "distractor"), ("musique", "dev"))


def golds_of(meta: dict[str, Any]) -> list[str]:
    """The answer and its aliases."""
    return [str(meta.get("answer", ""))] + [str(a) for a in meta.get("answer_aliases") or []]


class OneShotAnswer:
    """(a) The base retriever's top-k, then one answer call with the agent's answer prompt; the hits are the context."""

    returns_set = True

    def __init__(self, base: Retriever, chat: LocalToolChatModel, top_k: int) -> None:
        self.base, self.chat, self.top_k, self.answer = base, chat, top_k, ""

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        trace = trace if trace is not None else Trace()
        hits = self.base.search(query, self.top_k)
        chunks = [chunk_from_hit(h, query=query, turn=0) for h in hits]
        prompt = [
            SystemMessage(c) if r == "system" else HumanMessage(c)
            for r, c in answer_messages(query, render_working_set(chunks))
        ]
        self.answer = self.chat.invoke(prompt).text.strip()
        trace.record_llm_call()
        trace.count("iterative.retrieval_calls", 1)
        trace.count("iterative.context_tokens", context_tokens(chunks))
        return hits


class AgentAnswer:
    """(b) The iterative agent; its final working set is the context."""

    returns_set = True

    def __init__(self, agent: Any, corpus: dict[str, Any]) -> None:
        self.agent, self.corpus, self.answer = agent, corpus, ""

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        run = run_agent(self.agent, query)
        if trace is not None:
            trace.merge(run.trace)
            trace.count(f"stop.{run.stop_reason}")
        self.answer = str(run.answer or "")
        return [ScoredHit(obj=self.corpus[c["id"]], score=1.0, rank=r) for r, c in enumerate(run.working_set)]


def run_dataset(name: str, split: str, args: argparse.Namespace, lm: LocalLM) -> dict[str, Any]:
    """Both methods over one dataset."""
    ds = load_dataset(name, args.data_dir, split=split, limit=args.limit)
    ctx = MethodContext(corpus=ds.corpus, work_dir=Path(args.work_dir) if args.work_dir else None)
    base = {"bm25": baselines.build_bm25, "hybrid": baselines.build_hybrid}[args.base](ctx)
    chat = LocalToolChatModel(llm=lm, max_tokens=args.max_tokens, answer_max_tokens=args.answer_max_tokens)
    agent = build_iterative_agent(  # a failed LLM call is counted (stop.llm_error), as before
        chat, base, max_turns=args.max_turns, search_top_k=args.top_k, on_llm_error="stop"
    )
    methods = {"oneshot_top5": OneShotAnswer(base, chat, args.top_k), "agent": AgentAnswer(agent, ds.objects_by_id())}
    out: dict[str, Any] = {"dataset": name, "split": split, "n_questions": len(ds.queries), "summary": {}}
    for label, method in methods.items():

        def answers(q: Query, hits: list[ScoredHit], trace: Trace, method: Any = method) -> dict[str, float]:
            return dict(answer_scores(method.answer, golds_of(dict(q.metadata))))

        r = run_benchmark(
            ds,
            method,
            label=label,
            k=1000,
            llm=args.llm,
            extra=answers,
            progress=False,
            options={k: v for k, v in vars(args).items() if k not in ("out", "data_dir", "datasets", "records_dir")},
            records=Path(args.records_dir) / f"{name}-{label}.jsonl" if args.records_dir else None,
        )
        c = r.get("counters_per_query", {})
        out["summary"][label] = {
            "recall": r["metrics"]["set_recall"],
            **r["extra_means"],
            "searches": c.get("iterative.retrieval_calls", 0.0),
            "context_tokens": c.get("iterative.context_tokens", 0.0),
            "llm_calls": r["cost"]["llm_calls_per_query"],
            "seconds": r["cost"]["seconds_per_query"],
        }
        if label == "agent":
            out["agent_stops"] = {k[5:]: v for k, v in c.items() if k.startswith("stop.")}
    return out


def main() -> None:
    """Run the comparison (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=os.environ.get("RETRIEVEKIT_DATA_DIR"))
    p.add_argument("--limit", type=int, default=None, help="first N questions per dataset (default: all 70)")
    p.add_argument("--llm", default="smollm2", choices=("smollm2", "qwen0.5b"))
    p.add_argument("--base", default="bm25", choices=("bm25", "hybrid"))
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--max-turns", type=int, default=5)
    p.add_argument("--max-tokens", type=int, default=96)
    p.add_argument("--answer-max-tokens", type=int, default=24)
    p.add_argument("--work-dir", default=None)
    p.add_argument("--datasets", nargs="+", default=[d for d, _ in DATASETS])
    p.add_argument("--records-dir", default=None, help="one resumable per-query records file per dataset and method")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    lm = LocalLM.load(args.llm)
    results = []
    for name, split in DATASETS:
        if name in args.datasets:
            results.append(run_dataset(name, split, args, lm))
            write_json_atomic({"args": vars(args), "results": results}, args.out)
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
