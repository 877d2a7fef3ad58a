"""Trained-model folders: atomic save, versioned manifest, and the checks made at load time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from _tiny_lm import build_tiny_lm

from retrievekit.core.errors import IndexFormatError, InvalidInputError, ModelMismatchError, UnverifiedIndexWarning
from retrievekit.core.training import (
    MANIFEST_NAME,
    VERSION,
    ModelManifest,
    load_trained_model,
    read_model_manifest,
    resolve_model_dir,
    save_trained_model,
)


def logits(model, tok) -> torch.Tensor:
    ids = torch.tensor(
        [[tok.bos_token_id, *tok("Solar panels convert sunlight", add_special_tokens=False)["input_ids"]]]
    )
    with torch.no_grad():
        return model(input_ids=ids).logits


def manifest(**kw) -> ModelManifest:
    fields = {"kind": "self-retrieval", "base_model": "tiny", "corpus_hash": "abc123", "settings": {"prompt": "Q: {q}"}}
    return ModelManifest.new(**{**fields, **kw})


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Path, torch.Tensor]:
    model, tok = build_tiny_lm()
    out = tmp_path_factory.mktemp("trained")
    path = save_trained_model(model, tok, out / "model", manifest(train={"config": {"epochs": 3.0}}))
    assert path == out / "model"
    return out, logits(model, tok)


def test_round_trip_gives_equal_logits_from_either_folder(saved):
    out, want = saved
    for folder in (out, out / "model"):
        model, tok, m = load_trained_model(folder, kind="self-retrieval", corpus_hash="abc123", base_model="tiny")
        assert not model.training
        assert torch.equal(logits(model, tok), want)
        assert m.kind == "self-retrieval" and m.settings == {"prompt": "Q: {q}"} and m.train["config"]["epochs"] == 3.0
    assert resolve_model_dir(out) == out / "model" == resolve_model_dir(out / "model")
    data = json.loads((out / "model" / MANIFEST_NAME).read_text())
    assert data["format"] == "retrievekit-trained-model" and data["format_version"] == VERSION
    assert data["created"] and data["retrievekit_version"]


def test_mismatches_name_both_values(saved):
    out, _ = saved
    with pytest.raises(ModelMismatchError, match=r"'self-retrieval'.*'judge'"):
        load_trained_model(out, kind="judge")
    with pytest.raises(ModelMismatchError, match=r"'abc123'.*'other'"):
        load_trained_model(out, kind="self-retrieval", corpus_hash="other")
    with pytest.raises(ModelMismatchError, match=r"'tiny'.*'smollm2'"):
        load_trained_model(out, kind="self-retrieval", base_model="smollm2")
    with pytest.raises(ModelMismatchError, match=r"prompt='Q: \{q\}'.*prompt='X'"):
        load_trained_model(out, kind="self-retrieval", settings={"prompt": "X"})
    assert isinstance(ModelMismatchError("x"), InvalidInputError)


def test_corpus_free_model_fits_any_corpus():
    m = manifest(corpus_hash=None)
    m.check(kind="self-retrieval", corpus_hash="anything")
    manifest().check(kind="self-retrieval")  # a caller that does not say which corpus is not checked


def test_newer_foreign_corrupt_and_missing_folders(tmp_path: Path):
    d = tmp_path / "m"
    d.mkdir()
    with pytest.raises(IndexFormatError, match="no trained retrievekit model"):
        read_model_manifest(d)
    (d / MANIFEST_NAME).write_text(json.dumps({**manifest().to_dict(), "format_version": VERSION + 1}))
    with pytest.raises(IndexFormatError, match="upgrade retrievekit"):
        read_model_manifest(d)
    with pytest.raises(IndexFormatError, match="upgrade retrievekit"):
        load_trained_model(d, kind="self-retrieval")
    (d / MANIFEST_NAME).write_text(json.dumps({**manifest().to_dict(), "format": "retrievekit.bm25"}))
    with pytest.raises(IndexFormatError, match="not 'retrievekit-trained-model'"):
        read_model_manifest(d)
    (d / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(IndexFormatError, match="corrupt"):
        read_model_manifest(d)
    before_checksums = {"retrievekit_version": "0.0.9"}  # unsealed, as written before checksums (issue #62 item 7)
    (d / MANIFEST_NAME).write_text(
        json.dumps({"format": "retrievekit-trained-model", "format_version": 1, **before_checksums})
    )
    with pytest.warns(UnverifiedIndexWarning), pytest.raises(IndexFormatError, match="lacks the field 'kind'"):
        read_model_manifest(d)
    (d / MANIFEST_NAME).write_text(json.dumps({**manifest().to_dict(), **before_checksums}))
    with pytest.warns(UnverifiedIndexWarning), pytest.raises(IndexFormatError, match="could not load"):  # no weights
        load_trained_model(d, kind="self-retrieval")
    with pytest.raises(IndexFormatError, match="does not exist"):
        read_model_manifest(tmp_path / "nowhere")
    (tmp_path / "run" / "checkpoint").mkdir(parents=True)
    with pytest.raises(IndexFormatError, match="resume=True"):
        resolve_model_dir(tmp_path / "run")


def test_crash_while_saving_keeps_the_previous_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    model, tok = build_tiny_lm()
    target = tmp_path / "model"
    save_trained_model(model, tok, target, manifest())
    want = logits(model, tok)
    other, _ = build_tiny_lm(seed=3)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(type(tok), "save_pretrained", boom)  # dies after the weights were written
    with pytest.raises(OSError, match="disk full"):
        save_trained_model(other, tok, target, manifest(kind="judge"))
    monkeypatch.undo()
    loaded, ltok, m = load_trained_model(target, kind="self-retrieval")
    assert m.kind == "self-retrieval" and torch.equal(logits(loaded, ltok), want)
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no temp folder left behind


def test_gguf_loaded_model_is_made_savable(tmp_path: Path):
    model, tok = build_tiny_lm()
    model.hf_quantizer = object()  # what a gguf_file= load leaves behind
    model.config.quantization_config = {"quant_method": "gguf"}
    save_trained_model(model, tok, tmp_path / "m", manifest())
    assert "quantization_config" not in json.loads((tmp_path / "m" / "config.json").read_text())
    loaded, ltok, _ = load_trained_model(tmp_path / "m", kind="self-retrieval")
    assert torch.equal(logits(loaded, ltok), logits(model, tok))


def test_manifest_validation():
    with pytest.raises(InvalidInputError):
        ModelManifest.new(kind="", base_model="x")
    with pytest.raises(InvalidInputError):
        ModelManifest.new(kind="k", base_model="x", settings={"f": object()})
    with pytest.raises(InvalidInputError):
        ModelManifest(kind="k", base_model="x", corpus_hash=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="ModelManifest"):
        save_trained_model(None, None, "/tmp/x", {"kind": "k"})  # type: ignore[arg-type]
