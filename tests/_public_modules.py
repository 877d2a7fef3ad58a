"""Every public module of the ``retrievekit`` namespace package (core and integrations), packages included."""

from __future__ import annotations

import pkgutil

import retrievekit


def public_modules() -> list[str]:
    """The dotted names, sorted; a module or package whose name has a part starting with ``_`` is private."""
    names = set()
    for path in retrievekit.__path__:
        for info in pkgutil.walk_packages([path], prefix="retrievekit."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.add(info.name)
    return sorted(names)
