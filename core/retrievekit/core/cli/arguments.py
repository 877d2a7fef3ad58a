"""What several commands share: the benchmark data folder argument and the check of an output file.

Examples:
    >>> p = argparse.ArgumentParser(); data_dir_argument(p)
    >>> p.parse_args(["--data-dir", "/data"]).data_dir
    '/data'
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from retrievekit.core.errors import InvalidPathError
from retrievekit.core.paths import ensure_folder

__all__ = ["DATA_DIR_ENV", "check_output_file", "data_dir_argument"]

DATA_DIR_ENV = "RETRIEVEKIT_DATA_DIR"
"""The environment variable that names the benchmark data folder (``--data-dir``'s default)."""


def data_dir_argument(parser: argparse.ArgumentParser, *, optional: bool = False) -> None:
    """``--data-dir``: the benchmark data folder (default ``$RETRIEVEKIT_DATA_DIR``; required when that is unset,
    unless ``optional``: a command that can read its data from elsewhere).

    Examples:
        >>> p = argparse.ArgumentParser(); data_dir_argument(p)
        >>> p.parse_args(["--data-dir", "d"]).data_dir
        'd'
        >>> p = argparse.ArgumentParser(); data_dir_argument(p, optional=True)
        >>> p.parse_args([]).data_dir == os.environ.get(DATA_DIR_ENV)
        True
    """
    env_dir = os.environ.get(DATA_DIR_ENV)
    parser.add_argument(
        "--data-dir",
        default=env_dir,
        required=env_dir is None and not optional,
        help=f"benchmark data folder, laid out as docs/datasets.md describes (default: ${DATA_DIR_ENV})",
    )


def check_output_file(path: str | os.PathLike[str], what: str = "--out") -> Path:
    """Make sure ``path`` can be written as a file: its folder is created now, so a run never ends in a traceback.

    Raises :class:`~retrievekit.core.errors.InvalidPathError` when ``path`` is a folder, or its folder lies under a
    file or cannot be created (no permission, read-only file system).

    Examples:
        >>> import tempfile, pathlib
        >>> check_output_file(pathlib.Path(tempfile.mkdtemp()) / "new" / "r.json").parent.is_dir()
        True
        >>> check_output_file(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidPathError: --out ... is a folder; give a file name
    """
    target = Path(path)
    if target.is_dir():
        raise InvalidPathError(f"{what} {target} is a folder; give a file name")
    ensure_folder(target.parent, f"the folder of {what} {target}:")
    return target
