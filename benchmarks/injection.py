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
AGENT_SUITE = REPO / "integrations" / "retrievekit" / "langgraph" / "injection.py"


def _load(path: Path, name: str) -> Any:
    """A suite module from this checkout's file, registered as ``name`` (so an older package, which may lack it, is
    measured with the same suite)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _suite() -> Any:
    return _load(SUITE, "retrievekit.core.eval.injection")


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
        agent = _load(AGENT_SUITE, "retrievekit_agent_injection_suite")
        res["agent"] = agent.run_agent_injection(llm, kinds=kinds, queries=queries)
        print(f"agent: {res['agent']}", file=sys.stderr, flush=True)
    return {"retrievekit_version": __version__, "package": str(Path(sys.modules["retrievekit.core"].__file__).parent),
            "model": args.model, "queries": queries or list(range(len(suite.TOPICS))), "results": res}  # fmt: skip


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
