"""The GPU runs, one function per step of the plan (``plan.STEPS``); each takes the runner's context and returns the
step's numbers as a JSON-safe dict, or raises :class:`~benchmarks.gpu.runner.Pause` at a point it resumes from.

* ``judge_train``: the relevance judge trained on SciFact *train* qrels with BM25 hard negatives (issue #9);
  training minutes, pairs/s, peak GPU memory, holdout AUC before and after.
* ``judge_eval``: the trained and the zero-shot judge rerank the staged hybrid top-``rerank_k`` of every dev claim;
  nDCG@10 beside the CPU-measured BM25, dense and hybrid on the same candidates.
* ``judge_export``: the trained judge's folder as a tar, split into parts small enough to send back.
* ``sr_train`` / ``sr_eval``: Self-Retrieval on the whole corpus plus the train claims; Hit@1/5, MRR@5, nDCG@10,
  and every returned passage checked as an exact corpus span.
* ``sr_export``: the trained Self-Retrieval model in bf16, as parts to send back (its evaluation and MindRef's can
  then run on CPU when the GPU time runs out).
* ``mindref``: MindRef over the model ``sr_train`` made, with the stage-1 search/model-error diagnosis.
* ``throughput``: constrained vs unconstrained beam search (``benchmarks/constrained_throughput.py``).

Example:
    >>> sorted(n for n in __all__ if n.startswith("judge"))
    ['judge_eval', 'judge_export', 'judge_train']
"""

from __future__ import annotations

import argparse
import shutil
import time
from typing import Any

from benchmarks.gpu.cpu_side import summary
from benchmarks.gpu.parts import split_file, tar_folder
from benchmarks.gpu.runner import Context

__all__ = ["judge_eval", "judge_export", "judge_train", "mindref", "sr_eval", "sr_export", "sr_train", "throughput"]


def _torch() -> Any:
    import torch

    return torch


def _peak_reset() -> None:
    torch = _torch()
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()


def _peak_mib() -> float | None:
    torch = _torch()
    return torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None


def _on_step(ctx: Context, output_dir: Any) -> Any:
    """Pause, once the budget is spent, right after a step the trainer has checkpointed (never after the last step:
    the trainer saves the final model after it, and writes no checkpoint for it)."""
    import json

    from retrievekit.core.training.manifest import CHECKPOINT_SUBDIR

    state = output_dir / CHECKPOINT_SUBDIR / "trainer_state.json"
    progress = ctx.work / "state" / f"{output_dir.name}-progress.json"  # sent back: how far a paused run got
    started = time.perf_counter()

    def hook(step: int, loss: float) -> None:
        try:
            saved = json.loads(state.read_text())["step"]
        except (OSError, ValueError, KeyError):
            return
        if saved == step:
            progress.parent.mkdir(parents=True, exist_ok=True)
            seconds = round(time.perf_counter() - started, 1)
            progress.write_text(json.dumps({"checkpoint_step": step, "loss": loss, "seconds_this_call": seconds}))
            ctx.done_unit()
            ctx.maybe_pause()

    return hook


def _dev(ctx: Context) -> Any:
    from retrievekit.core.eval.datasets import load_dataset

    return load_dataset("scifact", ctx.data_dir, split="dev", limit=ctx.plan["limit"])


def _cpu(ctx: Context, name: str) -> Any:
    import json

    return json.loads((ctx.work / "cpu" / f"{name}.json").read_text())


class _Budgeted:
    """A retriever that pauses between queries once the budget is spent (finished queries are in the records)."""

    def __init__(self, inner: Any, ctx: Context) -> None:
        self.inner, self.ctx = inner, ctx

    def search(self, query: str, k: int = 10, *, trace: Any = None) -> Any:
        self.ctx.maybe_pause()
        hits = self.inner.search(query, k, trace=trace)
        self.ctx.done_unit()
        return hits


def _run(ctx: Context, ds: Any, retriever: Any, label: str, k: int, extra: Any = None) -> dict[str, Any]:
    """Every query through ``retriever`` with per-query records in ``WORK/records`` (a rerun resumes)."""
    from retrievekit.core.eval.runner import run_benchmark

    records = ctx.work / "records" / f"{label}.jsonl"
    records.parent.mkdir(parents=True, exist_ok=True)
    return run_benchmark(
        ds, _Budgeted(retriever, ctx), label=label, k=k, records=records, progress=False, extra=extra, keep_run=True
    )


# ----------------------------------------------------------------------------------------------------------- judge
def judge_train(ctx: Context) -> dict[str, Any]:
    """Train the judge (resumes from its last checkpoint in ``WORK/judge``)."""
    from retrievekit.core.cli.train_judge import collect_pairs
    from retrievekit.core.judge.train import train_judge
    from retrievekit.core.training import TrainConfig

    p = ctx.plan["judge"]
    ns = argparse.Namespace(
        dataset="scifact", data_dir=str(ctx.data_dir), split="train", synthesize=None, synth_llm=None,
        negatives=p["negatives"], miner="bm25", skip_top=0, max_pairs=p["max_pairs"], seed=0,
        base_model=ctx.model_label, device=None,
    )  # fmt: skip
    pairs, _, info = collect_pairs(ns)
    cfg = TrainConfig(**p["train"])
    model, tokenizer = ctx.base_model("float32")  # master weights in fp32, as the trainers load a base model
    _peak_reset()
    res = train_judge(pairs, output_dir=ctx.work / "judge", llm=ctx.model_label, model=model,
                      tokenizer=tokenizer, train_config=cfg, progress=False,
                      on_step=_on_step(ctx, ctx.work / "judge"))  # fmt: skip
    out = res.to_dict()
    train = out["train"]
    out["pairs"] = info
    out["examples_per_s"] = train["examples"] * train["epochs"] / train["seconds"] if train["seconds"] else None
    out["peak_gpu_mib"] = _peak_mib()
    return out


class _Candidates:
    """The staged first stage: each dev claim's hybrid top-k, in order (so the GPU needs no index)."""

    def __init__(self, ds: Any, candidates: dict[str, list[str]]) -> None:
        by_id = {o.id: o for o in ds.corpus}
        self.by_text = {q.text: [by_id[d] for d in candidates.get(q.id, []) if d in by_id] for q in ds.queries}

    def search(self, query: str, k: int = 10, *, trace: Any = None) -> Any:
        from retrievekit.core.types import ScoredHit

        objs = self.by_text.get(query, [])[:k]
        return [ScoredHit(obj=o, score=float(len(objs) - r), rank=r) for r, o in enumerate(objs)]


def _trained_judge(ctx: Context) -> tuple[Any, bool]:
    """The trained judge's folder (its LoRA adapter alone when the run made one, else the merged model) and whether
    it is the adapter."""
    from retrievekit.core.training.adapter import ADAPTER_SUBDIR, is_adapter_folder

    adapter = ctx.work / "judge" / ADAPTER_SUBDIR
    return (adapter, True) if is_adapter_folder(adapter) else (ctx.work / "judge" / "model", False)


def _judges(ctx: Context) -> dict[str, Any]:
    from retrievekit.core.judge import Judge
    from retrievekit.core.llm.local import LocalLM

    batch = int(ctx.plan["judge"]["score_batch_size"])

    def trained() -> Any:
        folder, adapter = _trained_judge(ctx)
        if adapter:  # what ships: the adapter alone, merged into a fresh base model
            return Judge.load(folder, batch_size=batch, base=ctx.base_model("float32"))
        return Judge.load(folder, batch_size=batch)

    def zero_shot() -> Any:
        model, tokenizer = ctx.base_model()
        return Judge.zero_shot(llm=LocalLM(model, tokenizer, name=ctx.model_label), batch_size=batch)

    return {"trained judge": trained, "zero-shot judge": zero_shot}


def judge_eval(ctx: Context) -> dict[str, Any]:
    """Rerank the staged candidates with the trained and the zero-shot judge (per-query records, resumable)."""
    from retrievekit.core.judge.method import JudgeRerankConfig, JudgeRerankRetriever

    ds, k = _dev(ctx), int(ctx.plan["judge"]["rerank_k"])
    first = _Candidates(ds, _cpu(ctx, "candidates"))
    out: dict[str, Any] = {"baselines (CPU)": _cpu(ctx, "baselines"), "rerank_k": k}
    for name, make in _judges(ctx).items():
        _peak_reset()
        retriever = JudgeRerankRetriever(first, make(), JudgeRerankConfig(rerank_k=k), label=name)
        row = summary(_run(ctx, ds, retriever, f"judge-eval-{name.split()[0]}", k))
        row["pairs_per_s"] = k / row["seconds_per_query"] if row["seconds_per_query"] else None
        row["peak_gpu_mib"] = _peak_mib()
        out[name] = row
    return out


def judge_export(ctx: Context) -> dict[str, Any]:
    """The trained judge as one tar (its LoRA adapter alone when it has one, else the whole model), split into parts
    that fit the files a call sends back."""
    export = ctx.work / "export"
    export.mkdir(parents=True, exist_ok=True)
    folder, adapter = _trained_judge(ctx)
    arcname = "adapter" if adapter else "model"
    archive = tar_folder(folder, export / f"judge-{arcname}.tar", arcname)
    entry = split_file(archive, export, part_bytes=int(float(ctx.plan["export"]["part_mib"]) * 2**20))
    return {"entry": entry, "parts": len(entry["parts"]), "bytes": entry["size"]}


# ------------------------------------------------------------------------------------------------ Self-Retrieval
def _train_pairs(ctx: Context) -> list[tuple[str, str]]:
    from retrievekit.core.eval.datasets import load_dataset

    train = load_dataset("scifact", ctx.data_dir, "train")
    return [(q.text, d) for q in train.queries for d, g in sorted(train.qrels.get(q.id, {}).items()) if g > 0]


def sr_train(ctx: Context) -> dict[str, Any]:
    """Train Self-Retrieval on the whole corpus plus the train claims (resumes in ``WORK/sr``)."""
    from retrievekit.core.generative.self_retrieval import train_self_retrieval
    from retrievekit.core.training import TrainConfig

    ds = _dev(ctx)
    ids = {o.id for o in ds.corpus}
    pairs = [(q, d) for q, d in _train_pairs(ctx) if d in ids]
    cfg = TrainConfig(**ctx.plan["self_retrieval"]["train"])
    model, tokenizer = ctx.base_model("float32")  # master weights in fp32, as the trainers load a base model
    _peak_reset()
    t0 = time.perf_counter()
    res = train_self_retrieval(list(ds.corpus), pairs=pairs, output_dir=ctx.work / "sr", llm=ctx.model_label,
                               model=model, tokenizer=tokenizer, train_config=cfg, progress=False,
                               on_step=_on_step(ctx, ctx.work / "sr"))  # fmt: skip
    return {**res.to_dict(), "documents": len(ds.corpus), "train_pairs": len(pairs),
            "call_seconds": time.perf_counter() - t0, "peak_gpu_mib": _peak_mib()}  # fmt: skip


def sr_export(ctx: Context) -> dict[str, Any]:
    """The trained Self-Retrieval model in bf16 (half the bytes of its fp32 master weights) as one tar of its
    ``model/`` folder, split into parts that fit the files a call sends back: Self-Retrieval and MindRef can then be
    evaluated on CPU from the same weights (``runner.py join --export sr-export``)."""
    import torch

    from retrievekit.core.generative.self_retrieval.method import KIND
    from retrievekit.core.training import load_trained_model
    from retrievekit.core.training.manifest import save_trained_model

    export = ctx.work / "export"
    export.mkdir(parents=True, exist_ok=True)
    model, tokenizer, manifest = load_trained_model(ctx.work / "sr", kind=KIND, device="cpu")
    folder = save_trained_model(model.to(torch.bfloat16), tokenizer, export / "sr-bf16" / "model", manifest)
    archive = tar_folder(folder, export / "sr-model.tar", "model")
    shutil.rmtree(folder.parent)
    entry = split_file(archive, export, part_bytes=int(float(ctx.plan["export"]["part_mib"]) * 2**20))
    archive.unlink()
    return {"entry": entry, "parts": len(entry["parts"]), "bytes": entry["size"], "dtype": "bfloat16"}


def sr_eval(ctx: Context) -> dict[str, Any]:
    """Self-Retrieval on every dev claim; every returned passage checked as an exact span of its document."""
    from benchmarks.self_retrieval_scifact import span_checks, span_totals
    from retrievekit.core.generative.self_retrieval import SelfRetrieval, SelfRetrievalConfig

    ds = _dev(ctx)
    sr = SelfRetrieval.from_model_dir(ctx.work / "sr", list(ds.corpus), SelfRetrievalConfig(hit_level="document"))
    _peak_reset()
    res = _run(ctx, ds, sr, "sr-eval", 10, extra=span_checks(sr))
    totals = span_totals(res.get("per_query", []))
    return {"self-retrieval": summary(res), "span_checks": totals, "peak_gpu_mib": _peak_mib(),
            "baselines (CPU)": _cpu(ctx, "baselines")}  # fmt: skip


# ------------------------------------------------------------------------------------------------------- MindRef
def mindref(ctx: Context) -> dict[str, Any]:
    """MindRef over the Self-Retrieval model, with hit checks and the stage-1 diagnosis on every query."""
    from retrievekit.core.generative.mindref import MindRef, MindRefConfig
    from retrievekit.core.generative.mindref_checks import diagnose_miss, hit_violations
    from retrievekit.core.generative.self_retrieval.method import KIND
    from retrievekit.core.llm.local import LocalLM
    from retrievekit.core.training import load_trained_model

    ds = _dev(ctx)
    model, tokenizer, _ = load_trained_model(ctx.work / "sr", kind=KIND)
    mr = MindRef(ds.corpus, LocalLM(model, tokenizer, name=f"{ctx.model_label} (self-retrieval)"),
                 MindRefConfig.from_options(ctx.plan["mindref"]["options"]))  # fmt: skip

    def checks(query: Any, hits: Any, trace: Any) -> dict[str, Any]:
        best = max((h.obj.metadata["title_score"] for h in hits), default=float("-inf"))
        gold = ds.qrels.get(query.id, {})
        return {**hit_violations(mr, hits), "stage1": diagnose_miss(mr, query.text, [h.id for h in hits], gold, best)}

    res = _run(ctx, ds, mr, "mindref", 10, extra=checks)
    outcomes: dict[str, int] = {}
    for row in res.get("per_query", []):
        stage1 = row.get("extra", {}).get("stage1")
        outcomes[stage1] = outcomes.get(stage1, 0) + 1
    return {"mindref": summary(res), "extra_means": res.get("extra_means"), "stage1_outcomes": outcomes}


def throughput(ctx: Context) -> dict[str, Any]:
    """Constrained vs unconstrained beam search at each beam width of the plan (the base model)."""
    from benchmarks.constrained_throughput import lookup_cost, measure, variants
    from retrievekit.core.llm.local import LocalLM

    p, ds = ctx.plan["throughput"], _dev(ctx)
    model, tokenizer = ctx.base_model()
    lm = LocalLM(model, tokenizer, name=ctx.model_label)
    ids, kinds = variants(lm, list(ds.corpus), ds.queries[0].text)
    rows, lookups = [], {}
    for beams in p["beams"]:
        rows += measure(lm, ids, kinds, beams=int(beams), steps=int(p["steps"]), repeats=int(p["repeats"]))
        lookups[str(beams)] = lookup_cost(lm, list(ds.corpus), beams=int(beams), steps=int(p["steps"]),
                                          repeats=int(p["repeats"]))  # fmt: skip
        ctx.done_unit()
    return {"device": str(lm.device), "rows": rows, "lookup_ms_per_step": lookups}
