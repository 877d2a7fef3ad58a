"""Saving and loading fine-tuned models with a versioned manifest that says what they were trained for.

A trained-model folder holds the transformers weights (``model.safetensors``), config, tokenizer files and
``retrievekit_model.json``: the format name and version, the model's ``kind`` (``"self-retrieval"``, ``"judge"``...),
its base model, the fingerprint of the corpus it internalised, method settings and the training record. Folders are
written atomically (temp folder + rename), so a crash while saving leaves the previous model intact. Loading checks
the manifest against the use (:class:`~retrievekit.core.errors.ModelMismatchError`) and needs only transformers
(LoRA adapters are merged before saving).

Examples:
    >>> m = ModelManifest.new(kind="judge", base_model="my-model", corpus_hash=None)
    >>> ModelManifest.from_dict(m.to_dict()) == m
    True
    >>> m.check(kind="self-retrieval")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.ModelMismatchError: the model is a 'judge' model, not a 'self-retrieval' model...
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrievekit.core.descriptors import check_descriptors
from retrievekit.core.errors import IndexFormatError, InvalidInputError, ModelMismatchError
from retrievekit.core.index.store import atomic_folder
from retrievekit.core.storage import atomic_write_text

__all__ = [
    "FORMAT",
    "MANIFEST_NAME",
    "VERSION",
    "ModelManifest",
    "load_trained_model",
    "read_model_manifest",
    "resolve_model_dir",
    "save_trained_adapter",
    "save_trained_model",
    "write_model_manifest",
]

MANIFEST_NAME = "retrievekit_model.json"
FORMAT = "retrievekit-trained-model"
VERSION = 1
MODEL_SUBDIR = "model"
CHECKPOINT_SUBDIR = "checkpoint"


def _package_version() -> str:
    from retrievekit.core import __version__

    return __version__


@dataclass(frozen=True)
class ModelManifest:
    """What a trained model is and what it was trained on.

    Attributes:
        kind: the use, e.g. ``"self-retrieval"`` or ``"judge"``.
        base_model: registry name (:data:`~retrievekit.core.llm.models.DEFAULT_MODEL`, ``"qwen0.5b"``) or a label of the model that was fine-tuned.
        corpus_hash: :func:`~retrievekit.core.index.baselines.corpus_fingerprint` of the internalised corpus
            (None: not corpus-specific).
        settings: method settings that must match at load time (prompt template...).
        train: the training record: ``{"config": TrainConfig.to_dict(), "result": TrainResult.to_dict(), ...}``.
        created: ISO-8601 UTC time of saving.
        retrievekit_version: the version that trained it.

    Examples:
        >>> ModelManifest.new(kind="judge", base_model="my-model").corpus_hash is None
        True
    """

    kind: str
    base_model: str
    corpus_hash: str | None
    settings: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    retrievekit_version: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:
            raise InvalidInputError("ModelManifest.kind must be a non-empty string")
        if not isinstance(self.base_model, str) or not self.base_model:
            raise InvalidInputError("ModelManifest.base_model must be a non-empty string")
        if self.corpus_hash is not None and not isinstance(self.corpus_hash, str):
            raise InvalidInputError("ModelManifest.corpus_hash must be a string or None")
        for name in ("settings", "train"):
            value = getattr(self, name)
            if not isinstance(value, Mapping):
                raise InvalidInputError(f"ModelManifest.{name} must be a mapping")
            try:
                json.dumps(dict(value))
            except (TypeError, ValueError) as e:
                raise InvalidInputError(f"ModelManifest.{name} must be JSON-serialisable: {e}") from None
            object.__setattr__(self, name, dict(value))

    @classmethod
    def new(
        cls,
        *,
        kind: str,
        base_model: str,
        corpus_hash: str | None = None,
        settings: Mapping[str, Any] | None = None,
        train: Mapping[str, Any] | None = None,
    ) -> ModelManifest:
        """A manifest stamped with the current time and retrievekit version.

        Examples:
            >>> ModelManifest.new(kind="judge", base_model="x").retrievekit_version != ""
            True
        """
        return cls(
            kind=kind,
            base_model=base_model,
            corpus_hash=corpus_hash,
            settings=dict(settings or {}),
            train=dict(train or {}),
            created=datetime.now(UTC).isoformat(timespec="seconds"),
            retrievekit_version=_package_version(),
        )

    def to_dict(self) -> dict[str, Any]:
        """The manifest as a JSON-ready dict (with the format name and version).

        Examples:
            >>> ModelManifest.new(kind="judge", base_model="x").to_dict()["format"]
            'retrievekit-trained-model'
        """
        return {"format": FORMAT, "format_version": VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ModelManifest:
        """Rebuild a manifest from :meth:`to_dict` output (format keys and unknown keys are ignored).

        Examples:
            >>> ModelManifest.from_dict({"kind": "judge", "base_model": "x", "corpus_hash": None}).kind
            'judge'
        """
        try:
            return cls(
                kind=d["kind"],
                base_model=d["base_model"],
                corpus_hash=d.get("corpus_hash"),
                settings=d.get("settings") or {},
                train=d.get("train") or {},
                created=str(d.get("created", "")),
                retrievekit_version=str(d.get("retrievekit_version", "")),
            )
        except KeyError as e:
            raise IndexFormatError(f"trained-model manifest lacks the field {e.args[0]!r}") from None

    def check(
        self,
        *,
        kind: str,
        corpus_hash: str | None = None,
        base_model: str | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        """Raise :class:`ModelMismatchError` unless the model fits the use.

        ``corpus_hash``/``base_model`` are checked only when given (a model with ``corpus_hash=None`` fits any
        corpus); each key of ``settings`` must equal the stored setting.

        Examples:
            >>> m = ModelManifest.new(kind="self-retrieval", base_model="my-model", corpus_hash="abc")
            >>> m.check(kind="self-retrieval", corpus_hash="abc", base_model="my-model")
            >>> m.check(kind="self-retrieval", corpus_hash="xyz")
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.ModelMismatchError: the model was trained on corpus 'abc', but this corpus is 'xyz'...
        """
        if self.kind != kind:
            raise ModelMismatchError(
                f"the model is a {self.kind!r} model, not a {kind!r} model; train one for {kind!r} (or load the "
                "right folder)"
            )
        if corpus_hash is not None and self.corpus_hash is not None and self.corpus_hash != corpus_hash:
            raise ModelMismatchError(
                f"the model was trained on corpus {self.corpus_hash!r}, but this corpus is {corpus_hash!r}; "
                "retrain it on this corpus"
            )
        if base_model is not None and self.base_model != base_model:
            raise ModelMismatchError(
                f"the model was fine-tuned from base model {self.base_model!r}, not {base_model!r}; pass "
                f"base_model={self.base_model!r} or retrain"
            )
        for key, want in (settings or {}).items():
            have = self.settings.get(key, "<unset>")
            if have != want:
                raise ModelMismatchError(
                    f"the model was trained with {key}={have!r}, but {key}={want!r} was asked for; use the trained "
                    "setting or retrain"
                )


def save_trained_model(model: Any, tokenizer: Any, folder: str | os.PathLike[str], manifest: ModelManifest) -> Path:
    """Write ``model`` (safetensors) + ``tokenizer`` + the manifest into ``folder``, atomically.

    GGUF-loaded models are made savable first (:func:`~retrievekit.core.llm.models.make_savable`). A crash while
    writing leaves the previous content of ``folder`` intact. PEFT-wrapped models must be merged first.

    Examples:
        >>> import tempfile
        >>> from retrievekit.core.llm.models import load_model_and_tokenizer
        >>> manifest = ModelManifest.new(kind="judge", base_model="my-model")
        >>> save_trained_model(*load_model_and_tokenizer(DEFAULT_MODEL), f"{tempfile.mkdtemp()}/model", manifest).name  # doctest: +SKIP
        'model'
    """
    from retrievekit.core.llm.models import make_savable

    if not isinstance(manifest, ModelManifest):
        raise InvalidInputError(f"manifest must be a ModelManifest, got {type(manifest).__name__}")
    if hasattr(model, "peft_config"):
        raise InvalidInputError(
            "merge the LoRA adapters first (model.merge_and_unload()) so the model loads without peft"
        )
    folder = Path(folder)
    make_savable(model)
    with atomic_folder(folder) as tmp:
        model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        write_model_manifest(tmp, manifest)
    return folder


def save_trained_adapter(tensors: dict[str, Any], folder: str | os.PathLike[str], manifest: ModelManifest) -> Path:
    """Write a LoRA adapter alone (:func:`~retrievekit.core.training.adapter.lora_tensors`) with its manifest into
    ``folder``, atomically; :func:`load_trained_model` merges it into its base model.

    Examples:
        >>> import tempfile, torch
        >>> t = {"lin.lora_A": torch.zeros(1, 2), "lin.lora_B": torch.zeros(2, 1), "lin.scaling": torch.tensor(2.0)}
        >>> m = ModelManifest.new(kind="judge", base_model="my-model")
        >>> sorted(p.name for p in save_trained_adapter(t, f"{tempfile.mkdtemp()}/adapter", m).iterdir())
        ['adapter.safetensors', 'retrievekit_model.json']
    """
    from retrievekit.core.training.adapter import write_adapter

    if not isinstance(manifest, ModelManifest):
        raise InvalidInputError(f"manifest must be a ModelManifest, got {type(manifest).__name__}")
    folder = Path(folder)
    with atomic_folder(folder) as tmp:
        write_adapter(tensors, tmp)
        write_model_manifest(tmp, manifest)
    return folder


def write_model_manifest(folder: str | os.PathLike[str], manifest: ModelManifest) -> Path:
    """Write ``manifest`` into the trained-model ``folder`` atomically (a crash leaves the old manifest intact),
    with the sha256 of every other file in the folder (``"checksums"``, verified by :func:`read_model_manifest`).

    Used after training to add what is only known then (a judge's Platt parameters) to a saved model.

    Examples:
        >>> import tempfile
        >>> path = write_model_manifest(tempfile.mkdtemp(), ModelManifest.new(kind="judge", base_model="my-model"))
        >>> path.name
        'retrievekit_model.json'
    """
    if not isinstance(manifest, ModelManifest):
        raise InvalidInputError(f"manifest must be a ModelManifest, got {type(manifest).__name__}")
    from retrievekit.core.index.checksums import MANIFEST_CHECK, folder_checksums, manifest_check

    path = Path(folder) / MANIFEST_NAME
    data = {**manifest.to_dict(), "checksums": folder_checksums(folder, exclude=[MANIFEST_NAME])}
    data[MANIFEST_CHECK] = manifest_check(data)  # the manifest (a judge's Platt parameters) covers itself
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True))
    return path


def resolve_model_dir(folder: str | os.PathLike[str]) -> Path:
    """The trained-model folder: ``folder`` itself, or ``folder/model`` for a training output folder.

    Raises:
        IndexFormatError: neither holds a manifest (the message says when an unfinished checkpoint is there).

    Examples:
        >>> import tempfile
        >>> resolve_model_dir(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... holds no trained retrievekit model (no retrievekit_model.json)...
    """
    folder = Path(folder)
    if (folder / MANIFEST_NAME).is_file():
        return folder
    if (folder / MODEL_SUBDIR / MANIFEST_NAME).is_file():
        return folder / MODEL_SUBDIR
    if not folder.is_dir():
        raise IndexFormatError(f"trained-model folder {folder} does not exist")
    hint = ""
    if (folder / CHECKPOINT_SUBDIR).is_dir():
        hint = "; it has an unfinished training checkpoint: run the training again with resume=True to finish it"
    raise IndexFormatError(f"{folder} holds no trained retrievekit model (no {MANIFEST_NAME}){hint}")


def read_model_manifest(folder: str | os.PathLike[str]) -> ModelManifest:
    """Read and check the manifest of a trained model (``folder`` or ``folder/model``), and the folder's files
    against the checksums it records (a folder saved before checksums is read with an ``UnverifiedIndexWarning``).

    Raises:
        IndexFormatError: missing, corrupt, foreign format, a newer format version than this retrievekit reads, or a
            file that is missing or differs from its recorded checksum.

    Examples:
        >>> import tempfile, pathlib, json
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / MANIFEST_NAME).write_text(json.dumps({**ModelManifest.new(kind="j", base_model="b").to_dict(), "format_version": 9}))
        >>> read_model_manifest(d)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... format version 9 ...; this retrievekit reads up to version 1: upgrade retrievekit
    """
    mdir = resolve_model_dir(folder)
    path = mdir / MANIFEST_NAME
    from retrievekit.core.index.store import read_versioned_json

    data = read_versioned_json(path, want=FORMAT, max_version=VERSION, kind="folder")
    _verify_model_files(mdir, data)
    try:
        return ModelManifest.from_dict(data)
    except InvalidInputError as e:
        raise IndexFormatError(f"{path} is corrupt: {e}") from e


def _verify_model_files(mdir: Path, data: Mapping[str, Any]) -> None:
    """Check a model folder's files against its manifest's checksums; warn when it records none."""
    from retrievekit.core.index.checksums import verify_sealed

    verify_sealed(mdir, data, exclude=[MANIFEST_NAME], written="saved", redo="save the model again", stacklevel=4)


def load_trained_model(
    folder: str | os.PathLike[str],
    *,
    kind: str,
    corpus_hash: str | None = None,
    base_model: str | None = None,
    settings: Mapping[str, Any] | None = None,
    device: str | None = None,
    dtype: Any = None,
    base: tuple[Any, Any] | None = None,
) -> tuple[Any, Any, ModelManifest]:
    """Load a trained model, its tokenizer and manifest, after checking that it fits the use.

    Args:
        folder: the model folder or a training output folder (``folder/model``).
        kind: the expected kind.
        corpus_hash: the corpus the caller will use (checked when given and the model is corpus-specific).
        base_model: the expected base model (checked when given).
        settings: settings that must equal the stored ones (checked key by key).
        device: torch device; default CUDA when available, else CPU.
        dtype: torch dtype or its name; default bf16 on CUDA, fp32 on CPU.
        base: for an adapter folder (``adapter/`` of a LoRA run): the ``(model, tokenizer)`` to merge it into
            (changed in place); default: the registry model the manifest names, loaded fresh.

    Raises:
        ModelMismatchError: kind, corpus, base model or a setting differs (both values in the message), or an
            adapter does not fit its base model.
        IndexFormatError: not a trained-model folder, a newer format, unreadable weights, or a config that asks to
            run code from the folder (``auto_map``; models load with ``trust_remote_code=False`` and safetensors only).

    Examples:
        >>> import tempfile
        >>> load_trained_model(tempfile.mkdtemp(), kind="judge")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... holds no trained retrievekit model (no retrievekit_model.json)
    """
    manifest = read_model_manifest(folder)
    manifest.check(kind=kind, corpus_hash=corpus_hash, base_model=base_model, settings=settings)
    mdir = resolve_model_dir(folder)
    from retrievekit.core.llm.models import device_and_dtype, import_transformers, refuse_remote_code
    from retrievekit.core.training.adapter import is_adapter_folder

    if is_adapter_folder(mdir):
        return (*_load_with_adapter(mdir, manifest, base, device, dtype), manifest)

    refuse_remote_code(mdir)  # a folder that asks to run code of its own: refused, never prompted for
    transformers = import_transformers()
    device, torch_dtype = device_and_dtype(device, dtype)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(mdir), trust_remote_code=False)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(mdir), dtype=torch_dtype, trust_remote_code=False, use_safetensors=True
        )
    except (OSError, ValueError) as e:
        check_descriptors(f"loading the trained model in {mdir}", e, by_count=False)  # out of fds: not damage
        raise IndexFormatError(f"could not load the trained model in {mdir}: {e}") from e
    return model.to(device).eval(), tokenizer, manifest


def _load_with_adapter(
    mdir: Path, manifest: ModelManifest, base: tuple[Any, Any] | None, device: str | None, dtype: Any
) -> tuple[Any, Any]:
    """The base model (given, or loaded by its registry name) with the adapter in ``mdir`` merged, in ``dtype``."""
    from retrievekit.core.llm.models import device_and_dtype, load_model_and_tokenizer
    from retrievekit.core.training.adapter import merge_adapter

    device, torch_dtype = device_and_dtype(device, dtype)
    if base is None:
        model, tokenizer = load_model_and_tokenizer(manifest.base_model, device="cpu", dtype="float32")
    else:
        model, tokenizer = base
    merge_adapter(model, mdir)
    return model.to(device=device, dtype=torch_dtype).eval(), tokenizer
