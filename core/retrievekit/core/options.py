"""Method options (``retrievekit bench --option key=value``) read into a config dataclass.

:func:`config_from_options` is the one reader every method config uses (``XConfig.from_options``): the known keys
are the dataclass's fields, and each value is coerced from the field's type hint, so a string from the command line
and a Python value give the same config. :func:`parse_options` reads the ``key=value`` strings of ``--option``;
:func:`option_bool` reads one boolean. :func:`check_option_keys` is the
one unknown-key check: every method refuses an option it does not read, naming the keys it knows;
:func:`check_at_least` the one lower-bound check of a config's fields.

Examples:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Demo:
    ...     beams: int = 5
    ...     fast: bool = False
    >>> config_from_options(Demo, {"beams": "3", "fast": "false"})
    Demo(beams=3, fast=False)
"""

from __future__ import annotations

import difflib
import json
import math
import os
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from retrievekit.core.errors import InvalidInputError

__all__ = [
    "cache_folder_option",
    "check_at_least",
    "check_option_keys",
    "coerce_option",
    "config_from_options",
    "option_bool",
    "parse_options",
]

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")

_NONE_WORDS = ("none", "null")


_BOOL_WORDS = ("true", "false", "1", "0", "yes", "no")


def parse_options(pairs: Sequence[str] | None) -> dict[str, Any]:
    """Parse ``key=value`` strings; values are read as JSON when they parse (numbers, booleans, lists), else kept as text.

    Examples:
        >>> parse_options(["budget=4000", "mode=fast", "use_llm=true", "alpha=0.5"])
        {'budget': 4000, 'mode': 'fast', 'use_llm': True, 'alpha': 0.5}
    """
    out: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidInputError(f"--option expects key=value, got {pair!r}")
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


def option_bool(name: str, value: Any) -> bool:
    """Read a boolean method option (``--option filter=true``): bools, 0/1, and true/false/yes/no strings.

    Examples:
        >>> option_bool("filter", "yes"), option_bool("crop", 0), option_bool("crop", "FALSE")
        (True, False, False)
        >>> option_bool("filter", "maybe")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: option filter must be true/false, got 'maybe'
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in _BOOL_WORDS:
        return value.lower() in ("true", "1", "yes")
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise InvalidInputError(f"option {name} must be true/false, got {value!r}")


def cache_folder_option(
    name: str, value: Any, work_dir: str | os.PathLike[str] | None, folder: str, *, default_on: bool
) -> Path | None:
    """The folder a cache option (``keyword_cache``, ``plan_cache``) names, or None when the cache is off.

    A path is that folder; ``true`` (or 1/yes) is ``<work_dir>/<folder>`` and needs a work dir; ``false`` (0/no),
    ``none`` or an empty string turns the cache off; unset is ``true`` when ``default_on`` and a work dir is given,
    else off.

    Examples:
        >>> cache_folder_option("plan_cache", "true", "runs", "agent-plans", default_on=False).as_posix()
        'runs/agent-plans'
        >>> cache_folder_option("plan_cache", None, "runs", "agent-plans", default_on=False) is None
        True
        >>> cache_folder_option("keyword_cache", "none", "runs", "arm-keywords", default_on=True) is None
        True
        >>> cache_folder_option("plan_cache", True, None, "agent-plans", default_on=False)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: option plan_cache=true needs a work dir (--work-dir); or pass a folder
    """
    if value is None:
        if not default_on or work_dir is None:
            return None
        value = True
    if isinstance(value, str) and value.strip().lower() in ("", "none"):
        return None
    if isinstance(value, (bool, int)) or (isinstance(value, str) and value.lower() in _BOOL_WORDS):
        if not option_bool(name, value):
            return None
        if work_dir is None:
            raise InvalidInputError(f"option {name}=true needs a work dir (--work-dir); or pass a folder")
        return Path(work_dir) / folder
    return Path(value)


def check_option_keys(options: Mapping[str, Any], known: Iterable[str], *, label: str) -> None:
    """Refuse the keys of ``options`` that are not in ``known``: an
    :class:`~retrievekit.core.errors.InvalidInputError` naming them (with the nearest known key when one is close)
    and every known key, in order. ``label`` names the method (``"bm25"``, ``"LATTICE"``).

    Examples:
        >>> check_option_keys({"fusion": "rrf"}, ["fusion", "rrf_k"], label="hybrid")  # all known: nothing happens
        >>> check_option_keys({"fuson": "rrf"}, ["fusion", "rrf_k"], label="hybrid")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown hybrid option(s): fuson (did you mean fusion?); known: fusion, rrf_k
    """
    names = list(dict.fromkeys(known))
    unknown = sorted({str(k) for k in options} - set(names))
    if not unknown:
        return
    parts = []
    for key in unknown:
        close = difflib.get_close_matches(key, names, n=1)
        parts.append(f"{key} (did you mean {close[0]}?)" if close else key)
    raise InvalidInputError(f"unknown {label} option(s): {', '.join(parts)}; known: {', '.join(names) or '(none)'}")


def _optional(hint: Any) -> tuple[Any, bool]:
    """The type a field holds and whether it also takes None (``int | None`` -> ``(int, True)``)."""
    if get_origin(hint) in (Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        return (args[0] if len(args) == 1 else hint), len(args) < len(get_args(hint))
    return hint, False


def _number(name: str, kind: type, value: Any) -> Any:
    """An int or float option from a number or a numeric string; an int must be whole (``"3"``, ``3.0``)."""
    what = "an int" if kind is int else "a number"
    if isinstance(value, bool):
        raise InvalidInputError(f"option {name} must be {what}, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if kind is int and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise InvalidInputError(f"option {name} must be {what}, got {value!r}") from None
    if not isinstance(value, (int, float)):
        raise InvalidInputError(f"option {name} must be {what}, got {value!r}")
    if kind is float:
        return float(value)
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise InvalidInputError(f"option {name} must be {what}, got {value!r}")
    return int(value)


def _sequence(name: str, hint: Any, value: Any) -> tuple[Any, ...]:
    """A ``tuple[X, ...]`` option from a list/tuple or a comma-separated string (empty parts skipped)."""
    args = [a for a in get_args(hint) if a is not Ellipsis]
    item = args[0] if len(args) == 1 else Any
    if isinstance(value, str):
        parts: list[Any] = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        raise InvalidInputError(f"option {name} must be a list or a comma-separated string, got {value!r}")
    return tuple(coerce_option(f"{name}[{i}]", item, p) for i, p in enumerate(parts))


def coerce_option(name: str, hint: Any, value: Any) -> Any:
    """One option value as the type ``hint`` says (see :func:`config_from_options` for the rules).

    Examples:
        >>> coerce_option("k_max", int | None, "null"), coerce_option("ks", tuple[int, ...], "3, 4")
        (None, (3, 4))
        >>> coerce_option("mode", Literal["a", "b"], "c")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: option mode must be a|b, got 'c'
    """
    kind, optional = _optional(hint)
    if optional and (value is None or (isinstance(value, str) and value.strip().lower() in _NONE_WORDS)):
        return None
    if optional and kind is not str and isinstance(value, str) and not value.strip():
        return None
    if kind is bool:
        return option_bool(name, value)
    if kind in (int, float):
        return _number(name, kind, value)
    if get_origin(kind) is tuple:
        return _sequence(name, kind, value)
    if get_origin(kind) is Literal:
        choices = get_args(kind)
        if value not in choices:
            raise InvalidInputError(f"option {name} must be {'|'.join(map(str, choices))}, got {value!r}")
        return value
    if kind is str:
        if value is None or isinstance(value, (bool, list, tuple, dict)):
            raise InvalidInputError(f"option {name} must be a string, got {value!r}")
        return str(value)
    return value


def check_at_least(config: object, names: Iterable[str], minimum: float) -> None:
    """The lower-bound check of a config's ``__post_init__``: :class:`~retrievekit.core.errors.InvalidInputError`
    naming the first of the fields ``names`` whose value is below ``minimum``; nothing when none is.

    Examples:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Demo:
        ...     beams: int = 5
        ...     weight: float = 0.5
        ...     def __post_init__(self):
        ...         check_at_least(self, ("beams",), 1)
        ...         check_at_least(self, ("weight",), 0)
        >>> Demo(beams=2).beams
        2
        >>> Demo(weight=-0.1)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: Demo.weight must be >= 0, got -0.1
    """
    for name in names:
        value = getattr(config, name)
        if float(value) < minimum:
            raise InvalidInputError(f"{type(config).__name__}.{name} must be >= {minimum}, got {value}")


def config_from_options(cls: type[C], options: Mapping[str, Any], *, label: str | None = None) -> C:
    """Build the config dataclass ``cls`` from ``--option key=value`` pairs, one key per dataclass field.

    The known keys are ``cls``'s ``init`` fields; every value is coerced from the field's type hint (read with
    :func:`typing.get_type_hints`):

    * ``bool``: :func:`option_bool` (true/false/yes/no/1/0, any case; the string ``"false"`` is False);
    * ``int`` / ``float``: a number or a numeric string (an int must be whole);
    * ``tuple[X, ...]``: a list/tuple or a comma-separated string, each item coerced to ``X``;
    * ``X | None``: also ``None`` or the strings ``none`` / ``null`` (and ``""`` unless ``X`` is ``str``);
    * ``Literal[...]``: one of its choices;
    * ``str``: ``str(value)``; anything else is passed through.

    The config's own ``__post_init__`` validation then applies. Unknown keys raise
    :class:`~retrievekit.core.errors.InvalidInputError` listing the known ones; a value that cannot be coerced
    raises one naming the option. ``label`` names the method in the unknown-key message (default: the class name).

    Examples:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Demo:
        ...     sizes: tuple[int, ...] = (3, 4)
        ...     cap: int | None = None
        ...     mode: Literal["fast", "exact"] = "fast"
        >>> config_from_options(Demo, {"sizes": "2,5", "cap": "none", "mode": "exact"})
        Demo(sizes=(2, 5), cap=None, mode='exact')
        >>> config_from_options(Demo, {"cap": "2k"})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: option cap must be an int, got '2k'
        >>> config_from_options(Demo, {"size": 2}, label="demo")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown demo option(s): size (did you mean sizes?); known: sizes, cap, mode
    """
    check_option_keys(options, [f.name for f in fields(cls) if f.init], label=label or cls.__name__)
    hints = get_type_hints(cls)
    return cls(**{name: coerce_option(name, hints[name], value) for name, value in options.items()})
