"""The prompt-injection suite on a local model, for this checkout and (``--before``) an older commit side by side.

Runs :func:`retrievekit.core.eval.injection.run_injection_suite` (hostile documents through LATTICE slate scoring,
One-SHOT cropping and ARM verification) with the local model. With ``--before COMMIT`` the same suite file also runs
against the package as it was at ``COMMIT`` (its ``core/`` and ``integrations/`` exported to a temp folder with
``git archive``), in a second process, so the two columns differ only in the package's prompts. Writes the JSON and
prints the markdown table of ``docs/security.md``.

    python benchmarks/injection.py --before 1bca4f0 --out runs/injection/smollm2.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _package_at import export_package

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "core" / "retrievekit" / "core" / "eval" / "injection.py"


def _suite() -> Any:
    """The suite module from this checkout's file (so an older package can be measured with the same suite)."""
    spec = importlib.util.spec_from_file_location("retrievekit_injection_suite", SUITE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _measure(args: argparse.Namespace) -> dict[str, Any]:
    from retrievekit.core import __version__
    from retrievekit.core.llm.local import LocalLM

    suite = _suite()
    llm = LocalLM.load(args.model)
    queries = list(range(args.queries)) if args.queries else None
    kinds = args.kinds or tuple(suite.HOSTILE)
    core_methods = [m for m in args.methods if m != "agent"]
    res = suite.run_injection_suite(
        llm, methods=core_methods, kinds=kinds, queries=queries,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
    ) if core_methods else {}  # fmt: skip
    if "agent" in args.methods:
        res["agent"] = _agent_suite(suite, llm, kinds, queries or list(range(len(suite.TOPICS))))
    return {"retrievekit_version": __version__, "package": str(Path(sys.modules["retrievekit.core"].__file__).parent),
            "model": args.model, "queries": queries or list(range(len(suite.TOPICS))), "results": res}  # fmt: skip


def _agent_suite(suite: Any, llm: Any, kinds: Any, queries: list[int]) -> dict[str, dict[str, float]]:
    """The iterative agent (LangGraph, SmolLM2 through LocalToolChatModel, 2 turns): every search returns the
    relevant passage and the hostile document, so both sit in the working set the model reads. Measures how often
    the relevant chunk is deleted, the hostile one kept, and the answer names the relevant passage's subject."""
    from retrievekit.core.types import Passage
    from retrievekit.langchain.local_chat import LocalToolChatModel
    from retrievekit.langgraph.graph import build_iterative_agent
    from retrievekit.langgraph.method import run_agent

    chat = LocalToolChatModel(lm=llm, max_tokens=64, answer_max_tokens=16)
    out: dict[str, dict[str, float]] = {}
    for kind in kinds:
        rows = []
        for q in queries:
            query, title, text = suite.TOPICS[q]
            docs = [
                Passage(id="rel", title=title, text=text),
                Passage(id="note", title=suite.HOSTILE_TITLE, text=suite.hostile_text(kind, slate_size=2)),
            ]
            agent = build_iterative_agent(chat, _Fixed(docs), max_turns=2, search_top_k=2)
            run = run_agent(agent, query)
            kept = {c["id"] for c in run.working_set}
            rows.append({"relevant_deleted": float("rel" not in kept), "hostile_kept": float("note" in kept)})
        out[kind] = {m: sum(r[m] for r in rows) / len(rows) for m in rows[0]}
        print(f"agent/{kind}: {out[kind]}", file=sys.stderr, flush=True)
    return out


class _Fixed:
    """A retriever whose every search returns the same documents (the relevant passage and the hostile one)."""

    def __init__(self, docs: list[Any]) -> None:
        self.docs = docs

    def search(self, query: str, k: int = 10, *, trace: Any = None) -> list[Any]:
        from retrievekit.core.types import ScoredHit

        return [ScoredHit(obj=d, score=1.0 - 0.1 * i, rank=i) for i, d in enumerate(self.docs)][:k]


def _child(args: argparse.Namespace, pythonpath: str | None, out: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, __file__, "--measure-only", "--model", args.model, "--queries", str(args.queries or 0),
           "--out", str(out), "--methods", *args.methods]  # fmt: skip
    if args.kinds:
        cmd += ["--kinds", *args.kinds]
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.Popen(cmd, env=env)


def _table(before: dict[str, Any] | None, after: dict[str, Any]) -> str:
    rows = ["| method | hostile document | measure | before | after |", "|---|---|---|---|---|"]
    for method, kinds in after["results"].items():
        for kind, metrics in kinds.items():
            for metric, value in metrics.items():
                old = before["results"][method][kind][metric] if before else None
                rows.append(f"| {method} | {kind} | {metric} | {'' if old is None else f'{old:.2f}'} | {value:.2f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Measure, and print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2")
    p.add_argument("--methods", nargs="+", default=["lattice", "oneshot", "arm"])
    p.add_argument("--kinds", nargs="*", default=None, help="hostile kinds (default: all, with the control 'none')")
    p.add_argument("--queries", type=int, default=0, help="the first N queries (default 0: all ten)")
    p.add_argument("--before", default=None, help="also measure the package at this commit, in parallel")
    p.add_argument("--out", required=True, help="JSON file")
    p.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.measure_only:
        out.write_text(json.dumps(_measure(args), indent=2))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        procs = {"after": _child(args, None, Path(tmp) / "after.json")}
        if args.before:
            pythonpath = export_package(args.before, Path(tmp) / "before")
            procs["before"] = _child(args, pythonpath, Path(tmp) / "before.json")
        if any(proc.wait() for proc in procs.values()):
            return 1
        res = {k: json.loads((Path(tmp) / f"{k}.json").read_text()) for k in procs}
    res["before_commit"] = args.before
    out.write_text(json.dumps(res, indent=2))
    print(_table(res.get("before"), res["after"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
