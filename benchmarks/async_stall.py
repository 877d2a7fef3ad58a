"""How long the event loop stalls, and how concurrent awaits scale, with a scripted LLM that answers in a fixed time.

The scenario of the loop-stall test (``tests/integrations/test_async_edges.py``), printed instead of asserted, so
that it can be run on any checkout (``PYTHONPATH=<checkout>/core:<checkout>/integrations``) to compare the code
before and after the async bridge. The LLM is a LlamaIndex ``CustomLLM`` that answers each call after ``--delay``
seconds (``time.sleep`` in ``chat``, ``await asyncio.sleep`` in ``achat``), scoring LATTICE's slates by one word;
the agent's chat model does the same with LangChain's ``_generate`` / ``_agenerate``. It prints:

1. one ``LatticeRetriever.aretrieve`` alone, then 8 at once: seconds, and the ratio;
2. 8 ``aretrieve``, 8 One-SHOT cropping ``apostprocess_nodes`` and 4 iterative-agent ``ainvoke`` at once: seconds;
3. the longest a task waking every 20 ms on the same loop was late during 1-2, and how many LLM calls went through
   the async and the sync API.

    python benchmarks/async_stall.py
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, CompletionResponse, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.schema import NodeWithScore, TextNode

from retrievekit.core.fakes import WordScoreLLM
from retrievekit.core.index import BM25Index
from retrievekit.core.lattice import SemanticTree, TreeNode
from retrievekit.core.lattice.method import Lattice
from retrievekit.core.lattice.tree import ROOT
from retrievekit.core.types import Passage
from retrievekit.langgraph import ScriptedToolChatModel, build_iterative_agent
from retrievekit.llama_index import LatticeRetriever, LlamaIndexChatLLM, OneShotPostprocessor

COUNTS = {"sync": 0, "async": 0}
_LOCK = threading.Lock()


def _count(kind: str) -> None:
    with _LOCK:
        COUNTS[kind] += 1


def _reply(prompt: str) -> str:
    return WordScoreLLM("volcano").reply(prompt) if "<data" in prompt else '{"keep": [0]}'


class TimedLLM(CustomLLM):
    """Answers after ``delay`` seconds: blocking in the sync methods, awaiting in the async ones."""

    delay: float = 0.3

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="timed", is_chat_model=True)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        _count("sync")
        time.sleep(self.delay)
        return CompletionResponse(text=_reply(prompt))

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError

    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        _count("sync")
        time.sleep(self.delay)
        return ChatResponse(message=ChatMessage(role="assistant", content=_reply(str(messages[-1].content))))

    async def achat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        _count("async")
        await asyncio.sleep(self.delay)
        return ChatResponse(message=ChatMessage(role="assistant", content=_reply(str(messages[-1].content))))


class TimedToolModel(ScriptedToolChatModel):
    """The agent's scripted tool-calling model, answering after ``delay`` seconds either way."""

    delay: float = 0.3

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        _count("sync")
        time.sleep(self.delay)
        return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        _count("async")
        await asyncio.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, stop, kwargs))])


def three_level_tree() -> SemanticTree:
    """root -> 3 topics -> 3 subtopics -> 3 leaves each; one subtopic and leaf mention volcanoes."""
    nodes, objects, topics = {ROOT: TreeNode(ROOT, "root")}, {}, []
    for t in range(3):
        subs = []
        for s in range(3):
            leaves = []
            for leaf in range(3):
                lid = f"t{t}s{s}l{leaf}"
                gold = (t, s, leaf) == (1, 2, 0)
                objects[lid] = Passage(id=lid, text="volcano lava" if gold else f"weather report {t}{s}{leaf}")
                nodes[lid] = TreeNode(lid, objects[lid].text, is_leaf=True)
                leaves.append(lid)
            sid = f"t{t}s{s}"
            nodes[sid] = TreeNode(sid, "volcano" if (t, s) == (1, 2) else f"weather {s}", children=leaves)
            subs.append(sid)
        nodes[f"t{t}"] = TreeNode(f"t{t}", "volcano geology" if t == 1 else f"sports {t}", children=subs)
        topics.append(f"t{t}")
    nodes[ROOT].children = topics
    return SemanticTree(nodes, objects)


async def _ticker(stop: asyncio.Event, late: list[float]) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        await asyncio.sleep(0.02)
        late.append(time.perf_counter() - start - 0.02)


async def scenario(delay: float) -> dict[str, float]:
    """Run the scenario; return its timings."""
    llm = TimedLLM(delay=delay)
    lattice = LatticeRetriever(Lattice(three_level_tree(), LlamaIndexChatLLM(llm, max_concurrency=32)))
    crop = OneShotPostprocessor(budget=200, crop=True, llm=LlamaIndexChatLLM(llm, max_concurrency=32))
    texts = [f"Lava is hot. Magma rises from vent {i}. Rocks melt." for i in range(2)]
    nodes = [NodeWithScore(node=TextNode(id_=f"n{i}", text=t), score=1.0) for i, t in enumerate(texts)]
    call = AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": "lava"}, "id": "1"}])
    corpus = BM25Index.build([Passage(id="lava", text="Lava is hot.")])
    agents = [build_iterative_agent(TimedToolModel(replies=[call, "hot"], delay=delay), corpus) for _ in range(4)]
    start = time.perf_counter()
    await lattice.aretrieve("volcano")
    one = time.perf_counter() - start
    stop, late = asyncio.Event(), [0.0]
    ticker = asyncio.create_task(_ticker(stop, late))
    start = time.perf_counter()
    await asyncio.gather(*[lattice.aretrieve("volcano") for _ in range(8)])
    eight = time.perf_counter() - start
    start = time.perf_counter()
    await asyncio.gather(
        *[lattice.aretrieve("volcano lava") for _ in range(8)],
        *[crop.apostprocess_nodes(nodes, query_str="What is hot?") for _ in range(8)],
        *[agent.ainvoke({"question": "Is lava hot?"}) for agent in agents],
    )
    mixed = time.perf_counter() - start
    stop.set()
    await ticker
    return {"one": one, "eight": eight, "mixed": mixed, "stall": max(late)}


def main(argv: list[str] | None = None) -> int:
    """Print the figures."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--delay", type=float, default=0.3, help="seconds each LLM call takes")
    args = p.parse_args(argv)
    r = asyncio.run(scenario(args.delay))
    print(f"one aretrieve: {r['one']:.2f} s; 8 at once: {r['eight']:.2f} s ({r['eight'] / r['one']:.2f}x one)")
    print(f"8 aretrieve + 8 cropping apostprocess_nodes + 4 agent ainvoke at once: {r['mixed']:.2f} s")
    print(f"longest loop stall: {r['stall'] * 1000:.0f} ms; LLM calls: {COUNTS['async']} async, {COUNTS['sync']} sync")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
