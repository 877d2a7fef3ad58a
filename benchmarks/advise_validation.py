"""Does ``retrievekit advise``'s label-free estimate match the judge AUC the qrels give? (issue #54, part 3.)

For each judge and dataset, :func:`~retrievekit.core.eval.advise.advise` runs twice on the dataset's dev split:

* **labelled** (the truth): the dev questions with their qrels, a gold document positive, BM25's hard negatives;
* **label-free** (the estimate): documents sampled from the corpus, a question written for each, the document
  positive, BM25's hard negatives: what a user without labels gets;
* **imitating** (``--modes ... imitating``): label-free, the dev questions given as the user's own (their labels
  withheld), so the writer imitates them (``advise --questions FILE`` without ``--qrels``).

The questions of the label-free runs are written once per dataset by one writer (``--writer``, a served LLM) and
replayed for every judge, so the judges are compared on the same probes; in ``retrievekit advise`` itself the
``--llm`` writes them. Each run keeps its records (``<out-dir>/<dataset>-<judge>-<mode>.jsonl``) and the written
questions are kept too (``<out-dir>/questions-<dataset>.jsonl``), so a stopped run resumes. The table gives each
(judge, dataset) pair's two AUCs (documents and summaries) with their 95 % bootstrap intervals and the error
(estimate minus truth); below it, the share of pairs within ±0.05 and the Spearman rank correlation of the
estimates with the truths over all pairs.

Judges (``--judges``): ``cosine`` (MiniLM), ``zero-shot`` (SmolLM2's Yes/No logits, local), a trained judge folder
(``judges/smollm2-scifact``), and ``served=CLIENT:MODEL@URL`` (the served LLM asked Yes/No through ``top_logprobs``;
start it with ``retrievekit serve --gguf qwen0.5b --port 8102 --parallel 1 --threads 1``).

    retrievekit serve --gguf qwen1.5b --port 8101 --parallel 1 --threads 1 &
    python benchmarks/advise_validation.py --data-dir "$RETRIEVEKIT_DATA_DIR" \\
        --writer openai:qwen1.5b@http://127.0.0.1:8101/v1 --datasets scifact hotpotqa obliqa \\
        --judges cosine judges/smollm2-scifact zero-shot served=openai:qwen0.5b@http://127.0.0.1:8102/v1 \\
        served=openai:qwen1.5b@http://127.0.0.1:8101/v1 --out-dir benchmarks/records/advise_validation
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

MODES = ("labelled", "label-free", "imitating")
"""``imitating``: label-free with the dev questions as the user's (no labels): the writer imitates them."""


class RecordedQuestions:
    """A question writer that asks ``writer`` once per prompt and keeps the reply in a JSONL file, so every judge
    replays the same questions and a rerun asks nothing again.

    Examples:
        >>> import tempfile, pathlib
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "q.jsonl"
        >>> RecordedQuestions(FixedReplyLLM("Why?"), path).complete("doc").text
        'Why?'
        >>> RecordedQuestions(None, path).complete("doc").text  # replayed: the writer is not asked
        'Why?'
    """

    def __init__(self, writer: Any, path: Path) -> None:
        self.writer, self.path = writer, path
        self.kept: dict[str, str] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    self.kept[row["prompt_sha256"]] = row["reply"]

    def complete(self, prompt: Any, **limits: Any) -> Any:
        """The kept reply to ``prompt`` (a text or chat messages), else the writer's (then kept)."""
        from retrievekit.core.llm.protocol import Completion

        key = prompt_key(prompt)
        if key not in self.kept:
            if self.writer is None:
                raise LookupError(f"no kept question for prompt {key[:12]} and no writer to ask")
            self.kept[key] = self.writer.complete(prompt, **limits).text
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"prompt_sha256": key, "reply": self.kept[key]}) + "\n")
        return Completion(self.kept[key])


def prompt_key(prompt: Any) -> str:
    """The SHA-256 a kept question is filed under: of the prompt's text when it is a text or one user message (the
    drivers send every prompt as messages: the same key either way, so kept files stay valid), else of the messages'
    roles and texts as JSON.

    Examples:
        >>> from retrievekit.core.llm.protocol import ChatMessage
        >>> prompt_key("doc") == prompt_key([ChatMessage("user", "doc")])
        True
        >>> prompt_key([ChatMessage("system", "s"), ChatMessage("user", "doc")]) == prompt_key("doc")
        False
    """
    if not isinstance(prompt, str):
        turns = [(str(m.role), str(m.content)) for m in prompt]
        prompt = turns[0][1] if len(turns) == 1 and turns[0][0] == "user" else json.dumps(turns)
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (ties get their mean rank).

    Examples:
        >>> spearman([1, 2, 3], [10, 20, 30]), spearman([1, 2, 3], [3, 2, 1])
        (1.0, -1.0)
    """

    def ranks(x: Sequence[float]) -> np.ndarray:
        arr = np.asarray(x, dtype=float)
        order = np.argsort(arr, kind="stable")
        r = np.empty(len(arr))
        r[order] = np.arange(len(arr), dtype=float)
        for v in np.unique(arr):
            r[arr == v] = r[arr == v].mean()
        return r

    ra, rb = ranks(a), ranks(b)
    return float(np.corrcoef(ra, rb)[0, 1])


def judge_label(spec: str) -> str:
    """A file-name-safe label of a ``--judges`` entry.

    Examples:
        >>> judge_label("served=openai:qwen0.5b@http://127.0.0.1:8102/v1"), judge_label("judges/smollm2-scifact")
        ('served-qwen0.5b', 'smollm2-scifact')
    """
    if spec.startswith("served="):
        return "served-" + spec.split(":", 2)[1].split("@", 1)[0]
    return re.sub(r"[^A-Za-z0-9.]+", "-", Path(spec).name).strip("-")


def load_judge(spec: str, corpus: Sequence[Any], timeout: float) -> Any:
    """The judge a ``--judges`` entry names, loaded as ``retrievekit bench --judge`` loads it."""
    from retrievekit.core.llm.judge_hooks import judge_from_options
    from retrievekit.core.llm.served_spec import parse_served_spec
    from retrievekit.core.registry import MethodContext

    if spec.startswith("served="):
        llm: Any = parse_served_spec(spec.split("=", 1)[1], timeout=timeout)
        kind = "served"
    else:
        llm, kind = "smollm2", spec
    judge, _ = judge_from_options(MethodContext(corpus=list(corpus), llm=llm, options={"judge_dir": kind}))
    return judge


def main(argv: list[str] | None = None) -> int:
    """Run every (dataset, judge, mode) not yet recorded, then print the table."""
    from retrievekit.core.eval.advise import advise
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.llm.resolve import resolve_llm
    from retrievekit.core.llm.served_spec import parse_served_spec

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--datasets", nargs="+", default=["scifact", "hotpotqa", "obliqa"])
    p.add_argument("--judges", nargs="+", default=["cosine"])
    p.add_argument("--writer", default=None, help="CLIENT:MODEL@URL that writes the label-free questions")
    p.add_argument("--max-calls", type=int, default=200, help="each run's bound, as advise's default")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per served call")
    p.add_argument("--out-dir", default="benchmarks/records/advise_validation")
    p.add_argument("--only", choices=MODES, default=None, help="run one mode only")
    p.add_argument("--modes", nargs="+", choices=MODES, default=["labelled", "label-free"], help="the modes to run")
    p.add_argument("--table-only", action="store_true", help="print the table from the kept reports; run nothing")
    args = p.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    writer = resolve_llm(parse_served_spec(args.writer, timeout=args.timeout)) if args.writer else None
    if not args.table_only:
        for name in args.datasets:
            ds = load_dataset(name, args.data_dir, split="dev")
            questions = {q.id: q.text for q in ds.queries}
            asker = RecordedQuestions(writer, out / f"questions-{name}.jsonl")
            for spec in args.judges:
                judge = load_judge(spec, ds.corpus, args.timeout)
                for mode in args.modes if args.only is None else (args.only,):
                    stem = f"{name}-{judge_label(spec)}-{mode}"
                    print(f"== {stem}", file=sys.stderr, flush=True)
                    report = advise(
                        ds.corpus,
                        judge,
                        question_llm=None if mode == "labelled" else asker,
                        questions=None if mode == "label-free" else questions,
                        qrels=ds.qrels if mode == "labelled" else None,
                        max_calls=args.max_calls,
                        records=out / f"{stem}.jsonl",
                        progress=True,
                    )
                    report |= {"dataset": name, "judge_spec": spec}
                    (out / f"{stem}.report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for estimate in [m for m in args.modes if m != "labelled"]:
        print(table(out, args.datasets, args.judges, estimate))
    return 0


def table(out: Path, datasets: Sequence[str], judges: Sequence[str], estimate: str = "label-free") -> str:
    """The markdown table and the summary lines, from the kept reports: the labelled AUC against the ``estimate``
    mode's (``label-free`` or ``imitating``)."""

    def fmt(a: dict[str, Any]) -> str:
        if a["auc"] is None:
            return "n/a"
        return f"{a['auc']:.3f} ({a['low']:.2f}-{a['high']:.2f})"

    lines = [
        f"| judge | dataset | kind | labelled AUC (truth) | {estimate} AUC (estimate) | error |",
        "|---|---|---|---|---|---|",
    ]
    pairs: list[tuple[float, float, str]] = []
    for spec in judges:
        for name in datasets:
            got = {}
            for mode in ("labelled", estimate):
                path = out / f"{name}-{judge_label(spec)}-{mode}.report.json"
                if path.is_file():
                    got[mode] = json.loads(path.read_text(encoding="utf-8"))
            if len(got) < 2:
                lines.append(f"| {judge_label(spec)} | {name} | | not run | not run | |")
                continue
            for kind in ("documents", "summaries"):
                truth, est = got["labelled"]["auc"][kind], got[estimate]["auc"][kind]
                err = "n/a"
                if truth["auc"] is not None and est["auc"] is not None:
                    pairs.append((truth["auc"], est["auc"], kind))
                    err = f"{est['auc'] - truth['auc']:+.3f}"
                lines.append(f"| {judge_label(spec)} | {name} | {kind} | {fmt(truth)} | {fmt(est)} | {err} |")
    if pairs:
        lines.append("")
    for label, chosen in (
        ("all pairs", pairs),
        *((k, [p for p in pairs if p[2] == k]) for k in ("documents", "summaries")),
    ):
        if not chosen:
            continue
        within = sum(abs(e - t) <= 0.05 for t, e, _ in chosen)
        mae = sum(abs(e - t) for t, e, _ in chosen) / len(chosen)
        rho = spearman([t for t, _, _ in chosen], [e for _, e, _ in chosen]) if len(chosen) > 2 else float("nan")
        lines.append(
            f"{label}: within +-0.05 {within} of {len(chosen)} ({within / len(chosen):.0%}; goal: at least 80 %), "
            f"Spearman {rho:.2f} (goal: at least 0.8), mean absolute error {mae:.3f}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
