"""JSON out of chat LLM replies: lenient parse with repair, and validation.

The parse/repair steps are pure functions (unit-testable without a model):

* :func:`strip_code_fences` -- take the body of a Markdown code fence;
* :func:`extract_json_block` -- cut the first balanced ``{...}`` / ``[...]`` out of surrounding prose
  (closing it when the reply was truncated);
* :func:`repair_json_text` -- single quotes, Python ``True/False/None``, trailing commas, unquoted keys;
* :func:`parse_json_lenient` -- all of the above in order, returning the value and the repairs it needed;
* :func:`validate_json` -- validate against a pydantic model or a JSON-schema dict.

Asking a model for JSON (the schema prompt, retries, the base class every chat model shares) is in
:mod:`retrievekit.core.llm.base`.

Examples:
    >>> parse_json_lenient("Sure! ```json\\n{'a': True, 'b': [1, 2,],}\\n```").value
    {'a': True, 'b': [1, 2]}
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from retrievekit.core.errors import InvalidInputError, LLMOutputError

__all__ = [
    "MAX_ERROR_CHARS",
    "ParsedJson",
    "extract_json_block",
    "parse_json_lenient",
    "repair_json_text",
    "schema_to_json",
    "strip_code_fences",
    "validate_json",
]

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
MAX_ERROR_CHARS = 600
"""How much of a failed reply or its error a trace note keeps."""


def strip_code_fences(text: str) -> str:
    """Return the body of the first Markdown code fence in ``text`` (or ``text`` unchanged when it has none).

    An opening fence without a closing one (a truncated reply) yields everything after the opening.

    Examples:
        >>> strip_code_fences('Here:\\n```json\\n{"a": 1}\\n```\\nDone.')
        '{"a": 1}'
        >>> strip_code_fences("no fence")
        'no fence'
    """
    m = _FENCE_RE.search(text)
    if m is None:
        return text
    return m.group(2).strip()


def extract_json_block(text: str) -> str | None:
    """Return the first balanced JSON object or array in ``text``, or ``None`` when there is none.

    Brackets inside (single- or double-quoted) strings are ignored. When the text ends before the value is
    closed (a truncated reply), the open string and brackets are closed.

    Examples:
        >>> extract_json_block('The answer is {"ids": [1, 2]} as requested.')
        '{"ids": [1, 2]}'
        >>> extract_json_block('{"a": [1, 2')
        '{"a": [1, 2]}'
        >>> extract_json_block("no json here") is None
        True
    """
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    stack: list[str] = []
    quote: str | None = None
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                # Mismatched closer: not something to guess about; hand back the rest (it will not parse).
                return text[start:]
            stack.pop()
            if not stack:
                return text[start : i + 1]
    else:
        i = len(text)
    body = text[start:i].rstrip()
    if quote is not None:
        body += quote
    body = body.rstrip().rstrip(",:")
    return body + "".join(reversed(stack))


def _rewrite_single_quoted(body: str) -> str:
    """Turn the inside of a single-quoted string into the inside of a double-quoted JSON string."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append("'" if nxt == "'" else ch + nxt)
            i += 2
            continue
        out.append('\\"' if ch == '"' else ch)
        i += 1
    return "".join(out)


_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_BARE_WORD_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")


def repair_json_text(text: str) -> tuple[str, list[str]]:
    """Fix common non-JSON habits of LLMs outside strings; returns the new text and the repairs made.

    Handles single-quoted strings, Python ``True``/``False``/``None``, trailing commas and unquoted
    object keys. Text inside double-quoted strings is never touched.

    Examples:
        >>> repair_json_text("{'a': True, b: None, 'c': [1, 2,],}")
        ('{"a": true, "b": null, "c": [1, 2]}', ['single quotes', 'Python literals', 'unquoted keys', 'trailing commas'])
        >>> repair_json_text('{"ok": "it\\'s True"}')
        ('{"ok": "it\\'s True"}', [])
    """
    out: list[str] = []
    repairs: set[str] = set()
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
            continue
        if ch == "'":
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            out.append('"' + _rewrite_single_quoted(text[i + 1 : j]) + '"')
            repairs.add("single quotes")
            i = j + 1
            continue
        if ch == ",":
            j = i + 1
            while j < n and text[j].isspace():
                j += 1
            if j < n and text[j] in "}]":
                repairs.add("trailing commas")
                i += 1
                continue
            out.append(ch)
            i += 1
            continue
        m = _BARE_WORD_RE.match(text, i) if (ch.isalpha() or ch in "_$") else None
        if m is not None:
            word = m.group(0)
            j = m.end()
            while j < n and text[j].isspace():
                j += 1
            prev = "".join(out).rstrip()[-1:]
            if j < n and text[j] == ":" and prev in ("{", ","):
                out.append(f'"{word}"')
                repairs.add("unquoted keys")
            elif word in _PY_LITERALS:
                out.append(_PY_LITERALS[word])
                repairs.add("Python literals")
            else:
                out.append(word)
            i = m.end()
            continue
        out.append(ch)
        i += 1
    order = ["single quotes", "Python literals", "unquoted keys", "trailing commas"]
    return "".join(out), [r for r in order if r in repairs]


@dataclass(frozen=True)
class ParsedJson:
    """Result of :func:`parse_json_lenient`: the value and the repairs it needed (empty when none).

    Examples:
        >>> ParsedJson(value=[1], repairs=()).repairs
        ()
    """

    value: Any
    repairs: tuple[str, ...] = field(default=())


def _try_loads(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError):
        return False, None


def parse_json_lenient(text: str) -> ParsedJson:
    """Parse an LLM reply as JSON, repairing it step by step; raise ``LLMOutputError`` when nothing parses.

    Steps, each tried only when the previous text does not parse: strict ``json.loads``; strip a code fence;
    cut out the first balanced object/array (closing a truncated one); rewrite quotes, literals, commas, keys.

    Examples:
        >>> parse_json_lenient('{"a": 1}')
        ParsedJson(value={'a': 1}, repairs=())
        >>> parse_json_lenient("Answer: {'a': 1,}").repairs
        ('extracted JSON from surrounding text', 'single quotes', 'trailing commas')
        >>> parse_json_lenient("I cannot help with that.")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.LLMOutputError: reply contains no JSON object or array
    """
    if not isinstance(text, str):
        raise LLMOutputError(f"reply must be text, got {type(text).__name__}", raw=repr(text))
    repairs: list[str] = []
    current = text.strip()
    ok, value = _try_loads(current)
    if ok:
        return ParsedJson(value, ())
    unfenced = strip_code_fences(current)
    if unfenced != current:
        repairs.append("stripped code fence")
        current = unfenced
        ok, value = _try_loads(current)
        if ok:
            return ParsedJson(value, tuple(repairs))
    block = extract_json_block(current)
    if block is None:
        raise LLMOutputError("reply contains no JSON object or array", raw=text)
    if block != current:
        repairs.append("extracted JSON from surrounding text" if current.find(block) >= 0 else "closed truncated JSON")
        current = block
        ok, value = _try_loads(current)
        if ok:
            return ParsedJson(value, tuple(repairs))
    fixed, fixes = repair_json_text(current)
    ok, value = _try_loads(fixed)
    if ok:
        return ParsedJson(value, tuple(repairs + fixes))
    try:
        json.loads(fixed)
    except (json.JSONDecodeError, ValueError, RecursionError) as e:
        detail = str(e)
    raise LLMOutputError(f"reply is not valid JSON even after repair ({detail})", raw=text)


def schema_to_json(schema: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    """JSON schema of a pydantic model class, or the dict itself.

    Examples:
        >>> from pydantic import BaseModel
        >>> class A(BaseModel):
        ...     x: int
        >>> schema_to_json(A)["required"]
        ['x']
    """
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict):
        return schema
    raise InvalidInputError(f"schema must be a pydantic model class or a JSON-schema dict, got {schema!r}")


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _mini_validate(value: Any, schema: dict[str, Any], path: str = "$") -> None:
    """A small JSON-schema subset (type, enum, const, properties, required, items) used without ``jsonschema``."""
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        ok = False
        for t in names:
            py = _JSON_TYPES.get(t, (object,))
            if isinstance(value, bool) and t in ("integer", "number"):
                continue
            if isinstance(value, py):
                ok = True
        if not ok:
            raise ValueError(f"{path}: expected {types}, got {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        raise ValueError(f"{path}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        raise ValueError(f"{path}: expected {schema['const']!r}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                raise ValueError(f"{path}: missing required property {key!r}")
        for key, sub in schema.get("properties", {}).items():
            if key in value and isinstance(sub, dict):
                _mini_validate(value[key], sub, f"{path}.{key}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for k, item in enumerate(value):
            _mini_validate(item, schema["items"], f"{path}[{k}]")


def validate_json(value: Any, schema: type[BaseModel] | dict[str, Any]) -> Any:
    """Validate parsed JSON against ``schema``; return the validated value or raise ``ValueError``.

    A pydantic model class yields a model instance; a JSON-schema dict yields ``value`` itself (checked with
    ``jsonschema`` when installed, else with a small built-in subset: type, enum, const, properties, required, items).

    Examples:
        >>> validate_json({"x": 1}, {"type": "object", "required": ["x"]})
        {'x': 1}
        >>> validate_json({}, {"type": "object", "required": ["x"]})
        Traceback (most recent call last):
        ...
        ValueError: ...'x' is a required property...
    """
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_validate(value)
    if not isinstance(schema, dict):
        raise InvalidInputError(f"schema must be a pydantic model class or a JSON-schema dict, got {schema!r}")
    try:
        jsonschema: Any = importlib.import_module("jsonschema")
    except ImportError:  # pragma: no cover - jsonschema ships with outlines/chromadb
        _mini_validate(value, schema)
        return value
    text = json.dumps(schema, sort_keys=True)
    if _plain(text) and _conforms(value, schema):
        return value
    error = jsonschema.exceptions.best_match(_validator(text).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "$"
        raise ValueError(f"{where}: {error.message}")
    return value


_PLAIN_KEYS = frozenset(
    ("type", "enum", "properties", "required", "items", "minItems", "maxItems", "additionalProperties", "title")
    + ("description", "minimum", "maximum")
)


@functools.lru_cache(maxsize=256)
def _plain(schema_text: str) -> bool:
    """Whether a schema uses only the keywords :func:`_conforms` checks (the methods' reply schemas do)."""

    def plain(schema: Any) -> bool:
        if not isinstance(schema, dict) or not _PLAIN_KEYS.issuperset(schema):
            return False
        if not isinstance(schema.get("additionalProperties", False), bool):
            return False
        if isinstance(schema.get("type"), list) or schema.get("type") not in (None, *_JSON_TYPES):
            return False
        subs = list((schema.get("properties") or {}).values()) + ([schema["items"]] if "items" in schema else [])
        return all(plain(sub) for sub in subs)

    return plain(json.loads(schema_text))


def _conforms(value: Any, schema: dict[str, Any]) -> bool:
    """Whether ``value`` surely matches a plain schema (:func:`_plain`); False sends it to ``jsonschema``, which
    decides and words the error: a fast path for valid replies only."""
    kind = schema.get("type")
    if kind is not None and (
        not isinstance(value, _JSON_TYPES[kind]) or (isinstance(value, bool) and kind != "boolean")
    ):
        return False
    if "enum" in schema and not any(type(e) is type(value) and e == value for e in schema["enum"] if e == value):
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < schema.get("minimum", value) or value > schema.get("maximum", value):
            return False
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        if any(k not in value for k in schema.get("required", ())):
            return False
        if schema.get("additionalProperties") is False and any(k not in props for k in value):
            return False
        return all(_conforms(value[k], sub) for k, sub in props.items() if k in value)
    if isinstance(value, list):
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
            return False
        return "items" not in schema or all(_conforms(item, schema["items"]) for item in value)
    return True


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    """A checked ``jsonschema`` validator of one schema, made once: checking a schema against its meta-schema costs
    ~5 ms, and every reply of a method is validated against one of a few schemas."""
    jsonschema: Any = importlib.import_module("jsonschema")
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)
