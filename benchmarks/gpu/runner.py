"""Run the GPU measurements on a bare offline machine, in resumable steps that fit in one call.

Every call carries one load that ``stage.py`` made and runs the same command from the repository root::

    python3 -m benchmarks.gpu.runner go .gpu/load-K --out "$OUT" [--budget-s 480] [--resume-from DIR] [--again STEP]

``go`` does, in order, what it can:

1. **receive**: copy the load's parts into the work folder (``$RK_GPU_WORK``, default ``/tmp/rk-gpu``), each
   checked by sha256; print the loads still missing and stop there until all have come;
2. **setup** (once): join every file from its parts (sha256 of the whole checked), install the wheels into
   ``WORK/site`` (``pip --no-index --no-deps --target``), unpack the data, the model and the CPU results, and run the
   import check (every module imported, every requirement specifier checked; a failure names each missing or refused
   distribution and stops);
3. **run**: the plan's steps (``plan.py``) in order until ``--budget-s`` is spent: training pauses only at a
   checkpoint, evaluation only between queries (per-query records), and at least one unit of work is done per call;
4. **report**: ``$OUT/results.json`` (every finished step's numbers, the step in progress, the setup report),
   ``$OUT/state.tar`` (results and records: what a fresh machine resumes from with ``--resume-from``) and the next
   parts of the exports: the trained judge (``judge-adapter.tar.partNNN``), then the Self-Retrieval model in bf16
   (``sr-model.tar.partNNN``); ``join`` reassembles either here, where Self-Retrieval and MindRef can also be
   evaluated on CPU.

``--again STEP`` forgets a finished step before running, so a second call on the same warm machine measures it once
more (the throughput runs are reported as two runs one after the other); the call before already sent its numbers.
On a warm machine the work folder survives between calls, so a training run longer than one call resumes from its
last checkpoint. After a dropped machine, ``--resume-from`` restores the finished steps, the per-query records and
which export parts came back; a training step whose model was lost with the machine is run again only when a step
still needs it (the checkpoints are too large to send back; an export whose parts all came back needs nothing).

Example (CPU, the tests' tiny profile)::

    python -m benchmarks.gpu.runner go .gpu/load-1 --work /tmp/w --out /tmp/o --budget-s 0
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.gpu.parts import StageError, join_parts, verify_file

# The GPU image has JAX; once anything imports it, it takes 75 % of the GPU's memory for itself, and torch ran out of
# memory beside it on the first real run (Self-Retrieval training, H200, 2026-11-26). Allocate on demand instead.
for _name, _value in {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}.items():
    os.environ.setdefault(_name, _value)

__all__ = [
    "Context",
    "Pause",
    "activate",
    "forget_steps",
    "go",
    "import_check",
    "join_export",
    "receive",
    "run_steps",
    "setup",
]

REPO = Path(__file__).resolve().parents[2]
#: A step that needs another's model: if that model is gone (a dropped machine), the other runs again.
NEEDS = {"judge-eval": "judge-train", "judge-export": "judge-train", "sr-export": "sr-train", "sr-eval": "sr-train",
         "mindref": "sr-train"}  # fmt: skip
#: The export steps, in the order their parts are sent back (``join --export NAME`` rebuilds one here).
EXPORTS = ("judge-export", "sr-export")
#: The parts already sent back; in ``state/`` so that a work folder restored from ``state.tar`` knows them too.
SENT = Path("state") / "sent.json"
#: Where each training step leaves its model in the work folder.
MODEL_OF = {"judge-train": "judge/model", "sr-train": "sr/model"}
#: The per-query records (``records/NAME.jsonl``) made with a trained model, and the step that writes each: a model
#: trained again is not the same model on a GPU (the judge's holdout AUC was 0.747 and 0.757 in two runs of one
#: seed), so that step starts over instead of mixing queries answered by two models.
RECORDS_BY = {"judge-eval-trained": "judge-eval", "sr-eval": "sr-eval", "mindref": "mindref"}


class Pause(Exception):
    """Raised inside a step when the call's time budget is spent, at a point the step can resume from."""


class Context:
    """What a step sees: the work folder, the plan, the time budget and the model loader.

    Example:
        >>> import tempfile
        >>> ctx = Context(Path(tempfile.mkdtemp()), {"plan": {}, "model": {"kind": "registry", "name": "x"}}, 0.0)
        >>> ctx.maybe_pause()  # nothing done yet: never pauses before the first unit of work
        >>> ctx.done_unit(); ctx.maybe_pause()
        Traceback (most recent call last):
        ...
        benchmarks.gpu.runner.Pause: time budget spent
    """

    def __init__(self, work: Path, manifest: dict[str, Any], budget_s: float) -> None:
        self.work = work
        self.manifest = manifest
        self.plan: dict[str, Any] = manifest["plan"]
        self.deadline = time.monotonic() + budget_s
        self.progressed = False

    @property
    def data_dir(self) -> Path:
        """The unpacked benchmark data (``WORK/data``)."""
        return self.work / "data"

    @property
    def model_label(self) -> str:
        """The base model's name in manifests (``smollm2``, or the staged folder's label)."""
        model = self.manifest["model"]
        return str(model["name"] if model["kind"] == "registry" else model["label"])

    def done_unit(self) -> None:
        """Record that a resumable unit (a checkpoint, a query) is finished."""
        self.progressed = True

    def maybe_pause(self) -> None:
        """Raise :class:`Pause` when the budget is spent and at least one unit was done in this call."""
        if self.progressed and time.monotonic() >= self.deadline:
            raise Pause("time budget spent")

    def base_model(self, dtype: str | None = None) -> tuple[Any, Any]:
        """A fresh ``(model, tokenizer)`` of the base model, on CUDA when there is one; ``dtype`` None: bf16 on CUDA,
        fp32 on CPU (training passes ``"float32"``, as ``train_judge`` and ``train_self_retrieval`` load it)."""
        model = self.manifest["model"]
        if model["kind"] == "registry":
            from retrievekit.core.llm.models import load_model_and_tokenizer

            return load_model_and_tokenizer(str(model["name"]), dtype=dtype)
        import transformers

        from retrievekit.core.llm.models import device_and_dtype, refuse_remote_code

        folder = self.work / str(model["path"])
        refuse_remote_code(folder)
        device, torch_dtype = device_and_dtype(None, dtype)
        tok = transformers.AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
        lm = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch_dtype, trust_remote_code=False)
        return lm.to(device).eval(), tok


# ----------------------------------------------------------------------------------------------- receive / setup
def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / "stage.json"
    if not path.is_file():
        raise StageError(f"{folder} holds no stage.json: not a load made by benchmarks/gpu/stage.py")
    data = json.loads(path.read_text())
    if data.get("format") != 1:
        raise StageError(f"{path}: stage format {data.get('format')!r}; this runner reads format 1")
    return dict(data)


def receive(load_dir: Path, work: Path) -> list[int]:
    """Copy a load's parts into ``WORK/parts`` (each checked); return the loads still missing.

    A work folder holding another staging (another ``stage.json``) is refused: use a fresh ``--work``.
    """
    manifest = _manifest(load_dir)
    work.mkdir(parents=True, exist_ok=True)
    known = work / "stage.json"
    if known.is_file() and json.loads(known.read_text()) != manifest:
        raise StageError(f"{work} holds another staging; give a fresh --work (or delete {work})")
    known.write_text((load_dir / "stage.json").read_text())
    parts = work / "parts"
    parts.mkdir(exist_ok=True)
    missing: set[int] = set()
    for entry in manifest["files"]:
        for part in entry["parts"]:
            src, dst = load_dir / part["file"], parts / part["file"]
            if src.is_file() and not dst.is_file():
                verify_file(src, part)
                shutil.copyfile(src, dst)
            if not dst.is_file():
                missing.add(int(part["load"]))
    return sorted(missing)


def _extract(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")


def setup(work: Path) -> dict[str, Any]:
    """Join, install and unpack everything once (``WORK/setup.json`` marks it done); return the import check."""
    manifest = _manifest(work)
    marker = work / "setup.json"
    if marker.is_file():
        activate(work)
        return dict(json.loads(marker.read_text()))
    files = work / "files"
    wheels = []
    for entry in manifest["files"]:
        path = join_parts(entry, work / "parts", files / entry["file"])
        if entry["kind"] == "wheel":
            wheels.append(str(path))
        else:
            _extract(path, work)
    if wheels:
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
               "--no-cache-dir", "--upgrade", "--target", str(work / "site"), *wheels]  # fmt: skip
        subprocess.run(cmd, check=True)
    activate(work)
    report = import_check(manifest)
    if report["ok"]:
        marker.write_text(json.dumps(report, indent=1, sort_keys=True))
    return report


def activate(work: Path) -> None:
    """Put the carried wheels, then the repository's ``core/`` and ``integrations/``, first on ``sys.path`` (and on
    ``PYTHONPATH`` for child processes); point the model cache and the data folder into the work folder."""
    paths = [str(work / "site"), str(REPO / "core"), str(REPO / "integrations")]
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    os.environ.setdefault("RETRIEVEKIT_CACHE", str(work / "cache"))
    os.environ["RETRIEVEKIT_DATA_DIR"] = str(work / "data")
    import importlib

    importlib.invalidate_caches()


def import_check(manifest: dict[str, Any]) -> dict[str, Any]:
    """Import every module the runs need and check every requirement specifier against what is installed.

    Returns ``{"ok", "modules": {name: version or error}, "missing": [...], "refused": [...]}``.
    """
    import importlib
    import importlib.metadata as md

    from packaging.specifiers import SpecifierSet

    modules: dict[str, str] = {}
    failed = []
    for name in manifest.get("modules", []):
        try:
            mod = importlib.import_module(name)
            modules[name] = str(getattr(mod, "__version__", "?"))
        except Exception as e:  # noqa: BLE001 - the report names every failure
            modules[name] = f"{type(e).__name__}: {e}"
            failed.append(name)
    missing, refused = [], []
    for dist, specs in sorted(manifest.get("requirements", {}).items()):
        try:
            version = md.version(dist)
        except md.PackageNotFoundError:
            missing.append(dist)
            continue
        bad = [s for s in specs if version not in SpecifierSet(s)]
        if bad:
            refused.append(f"{dist} {version} (needs {' and '.join(bad)})")
    ok = not (failed or missing or refused)
    return {"ok": ok, "modules": modules, "failed_imports": failed, "missing": missing, "refused": refused}


# ------------------------------------------------------------------------------------------------------ running
def _read(path: Path) -> dict[str, Any] | None:
    return dict(json.loads(path.read_text())) if path.is_file() else None


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
    os.replace(tmp, path)


def _reopen_lost_models(work: Path, steps: list[str]) -> None:
    """Mark a training step not done when its model is gone and a step that needs it is not done yet; the records
    its lost model made for unfinished steps go too."""
    state = work / "state"
    for step in steps:
        need = NEEDS.get(step)
        if need and not (state / f"{step}.json").is_file() and not (work / MODEL_OF[need]).is_dir():
            if (state / f"{need}.json").is_file():
                for label, writer in RECORDS_BY.items():
                    if NEEDS[writer] == need and not (state / f"{writer}.json").is_file():
                        (work / "records" / f"{label}.jsonl").unlink(missing_ok=True)
            (state / f"{need}.json").unlink(missing_ok=True)


def _export_parts(work: Path, step: str) -> list[str]:
    """The part files of an export step, in order (none when the step is not done)."""
    done = _read(work / "state" / f"{step}.json")
    return [p["file"] for p in done["entry"]["parts"]] if done else []


def _reopen_lost_export(work: Path) -> None:
    """After a dropped machine, export again only what cannot come back any more: an export with a part that was
    neither sent back nor is still here (its parts are then all made and sent again, since a re-trained model gives
    other bytes). An export whose parts all came back stays done, and its model is not trained again."""
    sent = set((_read(work / SENT) or {}).get("sent", []))
    for step in EXPORTS:
        names = _export_parts(work, step)
        if any(n not in sent and not (work / "export" / n).is_file() for n in names):
            (work / "state" / f"{step}.json").unlink()
            _write(work / SENT, {"sent": sorted(sent - set(names))})


def run_steps(ctx: Context) -> dict[str, Any]:
    """Run the plan's unfinished steps in order until the budget is spent; return ``{step: "done" | "paused" |
    "pending"}`` for this call (an error in a step propagates: the call fails and its state stays resumable)."""
    from benchmarks.gpu import steps as step_functions

    state = ctx.work / "state"
    order = list(ctx.plan["steps"])
    _reopen_lost_export(ctx.work)
    _reopen_lost_models(ctx.work, order)
    status: dict[str, Any] = {}
    for name in order:
        if (state / f"{name}.json").is_file():
            status[name] = "done"
            continue
        if ctx.progressed and time.monotonic() >= ctx.deadline:
            status[name] = "pending"
            continue
        fn = getattr(step_functions, name.replace("-", "_"))
        started = time.perf_counter()
        try:
            result = fn(ctx)
        except Pause:
            _add_partial(state, name, time.perf_counter() - started)
            status[name] = "paused"
            continue
        partial = _add_partial(state, name, time.perf_counter() - started)
        _write(state / f"{name}.json", {**result, "step_wall_seconds": partial["wall_seconds"]})
        ctx.done_unit()
        status[name] = "done"
    return status


def forget_steps(work: Path, names: list[str]) -> None:
    """Forget that the plan's steps ``names`` finished (their results and timings), so that this call runs them again.

    Raises:
        StageError: a name that is not a step of the staged plan.

    Examples:
        >>> import tempfile
        >>> forget_steps(Path(tempfile.mkdtemp()), [])  # nothing to forget
    """
    if not names:
        return
    steps = list(_manifest(work)["plan"]["steps"])
    unknown = [n for n in names if n not in steps]
    if unknown:
        raise StageError(f"--again {unknown[0]!r}: not a step of the staged plan {steps}")
    for name in names:
        for path in (work / "state" / f"{name}.json", work / "state" / f"{name}.partial.json"):
            path.unlink(missing_ok=True)


def _add_partial(state: Path, name: str, seconds: float) -> dict[str, Any]:
    """Add this call's seconds to a step's running total (``state/NAME.partial.json``)."""
    path = state / f"{name}.partial.json"
    partial = _read(path) or {"wall_seconds": 0.0, "calls": 0}
    partial = {"wall_seconds": partial["wall_seconds"] + seconds, "calls": partial["calls"] + 1}
    _write(path, partial)
    return partial


# ------------------------------------------------------------------------------------------------------- report
def _report(work: Path, out: Path, status: dict[str, Any], setup_report: dict[str, Any] | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    state = work / "state"
    results = {p.stem: _read(p) for p in sorted(state.glob("*.json")) if not p.stem.endswith(".partial")}
    _write(out / "results.json", {"status": status, "setup": setup_report, "results": results})
    _send_export_parts(work, out)  # before the state is packed: it records what this call sends
    with tarfile.open(out / "state.tar", "w") as tar:
        for folder in ("state", "records"):
            if (work / folder).is_dir():
                tar.add(work / folder, arcname=folder)


def _send_export_parts(work: Path, out: Path) -> None:
    """Copy the next unsent parts of the exports into ``out`` (the plan's ``parts_per_call`` in all, the judge's
    first) and record them as sent."""
    sent = set((_read(work / SENT) or {}).get("sent", []))
    per_call = int(_manifest(work)["plan"]["export"]["parts_per_call"])
    todo = [
        n for step in EXPORTS for n in _export_parts(work, step) if n not in sent and (work / "export" / n).is_file()
    ]
    for name in todo[:per_call]:
        shutil.copyfile(work / "export" / name, out / name)
    _write(work / SENT, {"sent": sorted(sent | set(todo[:per_call]))})


def _restore(resume_from: Path, work: Path) -> None:
    """Unpack a ``state.tar`` that an earlier call sent back (finished steps, records) into a fresh work folder."""
    archive = resume_from / "state.tar" if resume_from.is_dir() else resume_from
    if not archive.is_file():
        raise StageError(f"--resume-from {resume_from}: no state.tar there")
    if not (work / "state").is_dir():
        _extract(archive, work)


def go(
    load_dir: Path,
    work: Path,
    out: Path,
    *,
    budget_s: float,
    resume_from: Path | None = None,
    again: list[str] | None = None,
) -> dict[str, Any]:
    """Receive a load, set up once all have come, run steps within the budget (``again``: finished steps to run
    once more, see :func:`forget_steps`), and report to ``out``.

    The budget counts from this call's start, setup included, so a first call that installs everything still ends
    inside the machine's per-command limit.
    """
    started = time.monotonic()
    missing = receive(load_dir, work)
    if missing:
        summary = {"loads_missing": missing}
        out.mkdir(parents=True, exist_ok=True)
        _write(out / "results.json", summary)
        print(f"received {load_dir.name}; loads still missing: {missing}", flush=True)
        return summary
    if resume_from is not None:
        _restore(resume_from, work)
    report = setup(work)
    failures = {k: report[k] for k in ("failed_imports", "missing", "refused") if report[k]}
    print(f"import check: {'ok' if report['ok'] else json.dumps(failures)}", flush=True)
    if not report["ok"]:
        _report(work, out, {}, report)
        return {"setup": report}
    forget_steps(work, list(again or []))
    ctx = Context(work, _manifest(work), budget_s - (time.monotonic() - started))
    status = run_steps(ctx)
    _report(work, out, status, report)
    print(json.dumps(status), flush=True)
    return {"status": status}


def join_export(results_dir: Path, parts_dir: Path, dest: Path, export: str = "judge-export") -> Path:
    """Here, on CPU: join an export's returned parts (the trained judge, or with ``export="sr-export"`` the
    Self-Retrieval model) into the folder ``dest`` (checked against ``results.json``)."""
    if export not in EXPORTS:
        raise StageError(f"unknown export {export!r}; known: {list(EXPORTS)}")
    results = json.loads((results_dir / "results.json").read_text())["results"]
    if export not in results:
        raise StageError(f"{results_dir}/results.json has no finished {export!r}")
    entry = results[export]["entry"]
    archive = join_parts(entry, parts_dir, dest.parent / entry["file"])
    dest.mkdir(parents=True, exist_ok=True)
    _extract(archive, dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("go", help="receive a load, set up, run within the budget, report")
    g.add_argument("load")
    g.add_argument("--work", default=os.environ.get("RK_GPU_WORK", "/tmp/rk-gpu"))
    g.add_argument("--out", default=os.environ.get("OUT", "gpu-out"))
    g.add_argument(
        "--budget-s",
        type=float,
        default=480.0,
        help="seconds from the call's start after which no new unit of work starts",
    )
    g.add_argument("--resume-from", default=None, help="a folder (or state.tar) an earlier call sent back")
    g.add_argument("--again", action="append", default=[], metavar="STEP", help="run this finished step once more")
    j = sub.add_parser("join", help="here: join an export's returned parts into a folder")
    j.add_argument("--results", required=True, help="folder with the last results.json")
    j.add_argument("--parts", required=True, help="folder with every returned part (e.g. judge-adapter.tar.partNNN)")
    j.add_argument("--dest", required=True)
    j.add_argument("--export", default="judge-export", choices=EXPORTS, help="which export to join")
    args = ap.parse_args(argv)
    if args.command == "join":
        print(join_export(Path(args.results), Path(args.parts), Path(args.dest), args.export))
        return 0
    resume = Path(args.resume_from) if args.resume_from else None
    result = go(
        Path(args.load), Path(args.work), Path(args.out), budget_s=args.budget_s, resume_from=resume, again=args.again
    )
    return 1 if "setup" in result else 0


if __name__ == "__main__":
    raise SystemExit(main())
