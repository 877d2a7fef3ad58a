"""The iterative agent reads its LangGraph checkpoints as data: a tampered checkpoint is refused, never run.

The checkpoints are written by the real agent into a real ``SqliteSaver`` file; the attack rewrites one stored value
into the msgpack extension LangGraph's default serializer turns into a call (``os.system("touch MARKER")``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import ormsgpack
import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from retrievekit.core.errors import CheckpointError
from retrievekit.core.index import BM25Index
from retrievekit.core.types import Passage
from retrievekit.langgraph import ScriptedToolChatModel, build_iterative_agent
from retrievekit.langgraph.checkpoints import StrictCheckpointSerializer, strict_checkpointer

CORPUS = [Passage(id="a", text="Apples are red."), Passage(id="p", text="Pears are green.")]
CFG = {"configurable": {"thread_id": "t1"}}


def _agent(saver: SqliteSaver):
    call = AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": "apples"}, "id": "s1"}])
    llm = ScriptedToolChatModel(replies=[call, "red"])
    return build_iterative_agent(llm, BM25Index.build(CORPUS), checkpointer=saver, interrupt_before=["tools"])


def _keep_ext(code: int, data: bytes) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, data)


def _tamper(db: Path, marker: Path) -> None:
    """Replace ``question`` in every stored checkpoint by an extension that means ``os.system("touch marker")``."""
    evil = ormsgpack.Ext(0, ormsgpack.packb(("os", "system", f"touch {marker}")))
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT rowid, type, checkpoint FROM checkpoints").fetchall()
        assert rows and all(kind == "msgpack" for _, kind, _ in rows)
        for rowid, _, blob in rows:
            data = ormsgpack.unpackb(blob, ext_hook=_keep_ext, option=ormsgpack.OPT_NON_STR_KEYS)
            data["channel_values"]["question"] = evil
            con.execute("UPDATE checkpoints SET checkpoint = ? WHERE rowid = ?", (ormsgpack.packb(data), rowid))
        con.commit()
    finally:
        con.close()


def test_a_tampered_sqlite_checkpoint_is_refused_and_runs_nothing(tmp_path):
    db, marker = tmp_path / "agent.sqlite", tmp_path / "pwned"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        agent = _agent(saver)
        agent.invoke({"question": "What colour are apples?"}, CFG)  # paused before the tools: a checkpoint is saved
        assert agent.get_state(CFG).next == ("tools",)
    _tamper(db, marker)
    with SqliteSaver.from_conn_string(str(db)) as saver:  # what a user does: pass the saver to the agent
        agent = _agent(saver)
        with pytest.raises(CheckpointError, match=r"names os\.system") as err:
            agent.get_state(CFG)
        assert err.value.kind == "os.system"
        with pytest.raises(CheckpointError):
            agent.invoke(None, CFG)  # resuming the thread
    assert not marker.exists()


def test_strict_checkpoints_still_resume_a_sqlite_thread(tmp_path):
    db = tmp_path / "agent.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        _agent(saver).invoke({"question": "What colour are apples?"}, CFG)
    with SqliteSaver.from_conn_string(str(db)) as saver:  # a new process would do the same
        agent = _agent(saver)
        state = agent.get_state(CFG)
        assert state.next == ("tools",) and state.values["messages"][-1].tool_calls[0]["args"] == {"query": "apples"}
        while agent.get_state(CFG).next:
            out = agent.invoke(None, CFG)
    assert out["answer"] == "red" and [c["id"] for c in out["working_set"]] == ["a"]


def test_pickle_and_foreign_types_are_refused_the_callers_saver_is_unchanged():
    serde = StrictCheckpointSerializer()
    with pytest.raises(CheckpointError, match="'pickle'"):
        serde.loads_typed(("pickle", b"\x80\x04N."))
    nested = ormsgpack.packb({"a": [ormsgpack.Ext(2, ormsgpack.packb(("subprocess", "Popen", {"args": "x"})))]})
    with pytest.raises(CheckpointError, match="subprocess.Popen"):
        serde.loads_typed(("msgpack", nested))
    with pytest.raises(CheckpointError, match=r"datetime\.datetime\.now"):  # an allowed class, a method that is not
        serde.loads_typed(
            ("msgpack", ormsgpack.packb(ormsgpack.Ext(3, ormsgpack.packb(("datetime", "datetime", 0, "now")))))
        )
    with SqliteSaver.from_conn_string(":memory:") as saver:
        before = saver.serde
        assert isinstance(strict_checkpointer(saver).serde, StrictCheckpointSerializer) and saver.serde is before
