"""Running out of file descriptors is a ResourceLimitError wherever a file would otherwise be called corrupt.

The cases that used to slip through are made certain here, in a subprocess whose every descriptor is taken: an
``OSError(EMFILE)`` reading a manifest (was "manifest.json is corrupt"), and a Chroma error that does not say why it
failed, raised when the process cannot even list its own descriptors (was "Chroma refused count", seen in CI).
"""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap

import pytest

from retrievekit.core.descriptors import check_descriptors, says_out_of_descriptors
from retrievekit.core.errors import ResourceLimitError


def test_an_error_raised_from_emfile_is_told_through_its_chain():
    try:
        try:
            raise OSError(errno.EMFILE, "Too many open files")
        except OSError as inner:
            raise RuntimeError("Error executing plan: Failed to apply logs to the metadata segment") from inner
    except RuntimeError as outer:
        assert says_out_of_descriptors(outer)
        with pytest.raises(ResourceLimitError, match="out of file descriptors") as info:
            check_descriptors("count", outer)
        assert info.value.__cause__ is outer


def test_other_errors_with_descriptors_to_spare_pass_through():
    assert not says_out_of_descriptors(OSError(errno.ENOENT, "No such file or directory"))
    assert not says_out_of_descriptors(ValueError("Expecting value: line 1 column 1"))
    assert not says_out_of_descriptors(RuntimeError("error returned from database: (code: 24) not a database"))
    check_descriptors("reading manifest.json", ValueError("Expecting value: line 1 column 1"))  # returns


_EXHAUSTED = textwrap.dedent(
    """
    import os, resource, sys
    from pathlib import Path
    from retrievekit.core.errors import IndexFormatError, ResourceLimitError
    from retrievekit.core.descriptors import check_descriptors
    from retrievekit.core.index.store import read_versioned_json

    manifest = Path(sys.argv[1])
    manifest.write_text('{"format": "retrievekit.bm25", "format_version": 1}')
    broken = manifest.with_name("broken.json")
    broken.write_text('{"format": "retrievekit.bm25", "format_ver')
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    def outcome(fn):
        try:
            fn()
            return "PASSED"
        except ResourceLimitError:
            return "LIMIT"
        except IndexFormatError:
            return "CORRUPT"

    read = lambda path: read_versioned_json(path, want="retrievekit.bm25", max_version=1, kind="index")
    out = [outcome(lambda: read(manifest))]
    out.append(outcome(lambda: check_descriptors("count", RuntimeError("Failed to apply logs to the metadata segment"))))
    for fd in held[:4]:  # a few free, still within the headroom of the limit
        os.close(fd)
    out.append(outcome(lambda: read(broken)))
    for fd in held[4:]:
        os.close(fd)
    print(" ".join(out))
    """
)


def test_with_every_descriptor_taken_a_manifest_and_a_silent_chroma_error_are_resource_limits(tmp_path):
    """And a truncated manifest read near the limit, with a descriptor to read it, is still called corrupt."""
    run = subprocess.run(
        [sys.executable, "-c", _EXHAUSTED, str(tmp_path / "manifest.json")], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["LIMIT", "LIMIT", "CORRUPT"], run.stdout
