"""The files on the stack from a LlamaIndex ``LatticeRetriever`` call to the socket: how many retrievekit files a
model request passes through, awaited (``aretrieve``) and sync (``retrieve``).

It runs one query against the scripted OpenAI-compatible server (``tests/_async_llm_server.py``) with
``OpenAILike`` as the model and, at the first ``send`` / ``sendall`` of a socket that carries a chat request, reads the
Python stack: the frames from the edge's entry point down (awaited, the request is taken by ``aiohttp``'s
``ClientSession._request`` in a task of the driver's: its stack is joined to the stack that started the batch). Printed: the retrievekit files in stack order (the goal is
edge -> method step -> driver -> transport), their count, the file-to-file hops among them, and how many files of
any package the whole path holds.

    python benchmarks/call_stack_files.py
"""

from __future__ import annotations

import asyncio
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _async_llm_server import llm_server  # noqa: E402
from _lattice import planted_tree  # noqa: E402

_SEEN: list[list[traceback.FrameSummary]] = []


_PARENT: list[list[traceback.FrameSummary]] = []


def _profile(frame: Any, event: str, arg: Any) -> None:
    if event == "call" and frame.f_code.co_name in ("_asend_batch", "run_with_deadline") and not _PARENT:
        # the calls' tasks (awaited) or the request's watchdog thread (sync) start here
        _PARENT.append(traceback.extract_stack(frame))
    if event == "call" and frame.f_code.co_name == "_request" and "aiohttp" in frame.f_code.co_filename and not _SEEN:
        _SEEN.append(traceback.extract_stack(frame))  # the awaited transport takes the request (its body is sent
        # by a task of aiohttp's own)
    if event == "c_call" and getattr(arg, "__name__", "") in ("send", "sendall") and not _SEEN:
        owner = getattr(arg, "__self__", None)
        if type(owner).__name__ == "socket":
            _SEEN.append(traceback.extract_stack(frame))


def _ours(path: str) -> str | None:
    for root in ("core/retrievekit/", "integrations/retrievekit/"):
        if root in path:
            return "retrievekit/" + path.split(root, 1)[1]
    return None


def _report(name: str, stack: list[traceback.FrameSummary], entry: str) -> None:
    starts = [i for i, f in enumerate(stack) if f.name == entry and _ours(f.filename)]
    if not starts and _PARENT and any(f.name == entry for f in _PARENT[0]):  # sent by a task or thread of the driver
        first = next(i for i, f in enumerate(stack) if _ours(f.filename))
        stack = _PARENT[0] + stack[first:]
        starts = [i for i, f in enumerate(stack) if f.name == entry and _ours(f.filename)]
    if not starts:  # sent from a pool thread (a batch's calls side by side): its stack starts at the pool
        starts = [next(i for i, f in enumerate(stack) if _ours(f.filename))]
        name += " (from a pool thread, its stack from the first retrievekit frame)"
    frames = stack[starts[0] :]
    files = [_ours(f.filename) or f.filename for f in frames]
    ours = [f for f in files if f.startswith("retrievekit/")]
    order = [f for i, f in enumerate(ours) if i == 0 or ours[i - 1] != f]
    print(
        f"{name}: {len(set(ours))} retrievekit files, {len(order) - 1} hops among them, {len(set(files))} files in all"
    )
    for f in order:
        print(f"    {f}")


def _profiled_deadline_workers() -> None:
    """The sync driver's requests run on the deadline watchdog's reused workers, started before the profile was
    set: each call sets it on its worker while it runs."""
    from retrievekit.core import deadline

    run = deadline._Call.run

    def profiled(call: Any) -> None:
        sys.setprofile(_profile)
        try:
            run(call)
        finally:
            sys.setprofile(None)

    deadline._Call.run = profiled  # type: ignore[method-assign]


def main() -> None:
    from llama_index.llms.openai_like import OpenAILike

    from retrievekit.core.lattice.method import Lattice
    from retrievekit.llama_index import LatticeRetriever, LlamaIndexChatLLM

    with llm_server(0.01) as server:
        llm = OpenAILike(model="scripted", api_base=server.url, api_key="-", is_chat_model=True, timeout=60)
        retriever = LatticeRetriever(Lattice(planted_tree(), LlamaIndexChatLLM(llm)), similarity_top_k=3)
        asyncio.run(retriever.aretrieve("warm up"))  # connections and imports made before the stack is read
        retriever.retrieve("warm up")
        _profiled_deadline_workers()
        for name, run, entry in (
            ("aretrieve", lambda: asyncio.run(retriever.aretrieve("volcano magma")), "_aretrieve"),
            ("retrieve", lambda: retriever.retrieve("volcano magma"), "_retrieve"),
        ):
            _SEEN.clear()
            _PARENT.clear()
            sys.setprofile(_profile)
            import threading

            threading.setprofile(_profile)
            try:
                run()
            finally:
                sys.setprofile(None)
                threading.setprofile(None)  # type: ignore[arg-type]
            _report(name, _SEEN[0], entry)


if __name__ == "__main__":
    main()
