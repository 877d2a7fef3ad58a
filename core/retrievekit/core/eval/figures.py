"""The matplotlib side of the eval plots, written once: pyplot on the headless Agg backend (or a typed error naming
the extra that installs it), and a figure saved as a PNG in a folder made for it.

Examples:
    >>> import pathlib, tempfile
    >>> plt = pyplot("for this example")
    >>> fig, ax = plt.subplots()
    >>> save_figure(fig, pathlib.Path(tempfile.mkdtemp()) / "sub" / "f.png").name
    'f.png'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from retrievekit.core.errors import MissingDependencyError
from retrievekit.core.paths import ensure_folder

__all__ = ["pyplot", "save_figure"]


def pyplot(purpose: str) -> Any:
    """``matplotlib.pyplot`` on the Agg backend (no display needed); without matplotlib a
    :class:`~retrievekit.core.errors.MissingDependencyError` that names the bench extra and ``purpose``.

    Examples:
        >>> pyplot("for curves").get_backend().lower()
        'agg'
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependencyError("matplotlib", 'pip install "retrievekit[bench]"', purpose) from None
    return plt


def save_figure(fig: Any, out_png: str | os.PathLike[str], *, dpi: int = 120) -> Path:
    """Lay ``fig`` out tightly, write it to ``out_png`` (its folder made first) and close it; returns the path.

    Examples:
        >>> import pathlib, tempfile
        >>> fig, _ = pyplot("for this example").subplots()
        >>> out = save_figure(fig, pathlib.Path(tempfile.mkdtemp()) / "g.png", dpi=50)
        >>> out.stat().st_size > 0
        True
    """
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = Path(out_png)
    ensure_folder(out.parent)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out
