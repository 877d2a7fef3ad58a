"""A model folder whose config asks transformers to run its own code is refused: a typed error, no prompt, no code.

Each load runs in a subprocess whose stdin answers ``y``: before the fix transformers asked "Do you wish to run the
custom code? [y/N]", read the ``y`` and imported the folder's module (which writes a marker file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _paths import REPO
from _tiny_lm import build_tiny_lm

PROMPT = "Do you wish to run the custom code"
EVIL = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\nfrom transformers import LlamaConfig\n\n\nclass EvilConfig(LlamaConfig):\n    model_type = 'evil_custom'\n"


def _ask_for_remote_code(folder: Path, marker: Path) -> None:
    """Make ``folder``'s config name a model type of its own, implemented in a module of the folder."""
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config["model_type"] = "evil_custom"
    config["auto_map"] = {
        "AutoConfig": "configuration_evil.EvilConfig",
        "AutoModelForCausalLM": "modeling_evil.EvilModel",
    }
    config_path.write_text(json.dumps(config))
    for name in ("configuration_evil.py", "modeling_evil.py"):
        (folder / name).write_text(EVIL.format(marker=str(marker)))


def _load_in_subprocess(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_MODULES_CACHE": str(tmp_path / "hf_modules"),
        "RETRIEVEKIT_CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]),
    }
    script = (
        "from retrievekit.core.errors import RetrieveKitError\n"
        f"try:\n    {code}\n    print('LOADED')\n"
        "except RetrieveKitError as e:\n    print('TYPED', type(e).__name__, e)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script], input="y\ny\ny\n", capture_output=True, text=True, env=env, timeout=300
    )


def _assert_refused(proc: subprocess.CompletedProcess[str], marker: Path) -> None:
    out = proc.stdout + proc.stderr
    assert PROMPT not in out, out
    assert not marker.exists(), out
    assert proc.returncode == 0 and "TYPED IndexFormatError" in proc.stdout and "asks to run its own code" in out, out


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_lm()


def test_trained_model_folder_asking_for_remote_code_is_refused(tmp_path, tiny):
    from retrievekit.core.training import ModelManifest, save_trained_model, write_model_manifest

    manifest = ModelManifest.new(kind="judge", base_model="tiny")
    folder = save_trained_model(*tiny, tmp_path / "judge", manifest)
    marker = tmp_path / "ran"
    _ask_for_remote_code(folder, marker)
    write_model_manifest(folder, manifest)  # the attacker also records fresh checksums: auto_map is what refuses it
    code = (
        f"from retrievekit.core.training import load_trained_model; load_trained_model({str(folder)!r}, kind='judge')"
    )
    _assert_refused(_load_in_subprocess(code, tmp_path), marker)


def test_model_cache_asking_for_remote_code_is_refused(tmp_path, tiny):
    from retrievekit.core.llm import models

    target = tmp_path / "cache" / "models" / "smollm2"
    model, tok = tiny
    model.save_pretrained(str(target), safe_serialization=True)
    tok.save_pretrained(str(target))
    manifest = models._manifest_for(models.MODEL_REGISTRY["smollm2"])  # a cache that matches: it would be loaded
    (target / models._MANIFEST).write_text(json.dumps(manifest))
    marker = tmp_path / "ran"
    _ask_for_remote_code(target, marker)
    code = "from retrievekit.core.llm.models import load_model_and_tokenizer; load_model_and_tokenizer('smollm2')"
    _assert_refused(_load_in_subprocess(code, tmp_path), marker)


def test_trained_model_folder_with_a_changed_weight_file_is_refused(tmp_path, tiny):
    from retrievekit.core.errors import IndexFormatError
    from retrievekit.core.training import ModelManifest, load_trained_model, save_trained_model

    folder = save_trained_model(*tiny, tmp_path / "judge", ModelManifest.new(kind="judge", base_model="tiny"))
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0x20  # one weight changes; the file still parses
    weights.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="model.safetensors does not match its recorded checksum"):
        load_trained_model(folder, kind="judge")
