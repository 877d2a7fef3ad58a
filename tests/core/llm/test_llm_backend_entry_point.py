"""A served-LLM client from another package, plugged in through the ``retrievekit.llms`` entry-point group: the
worked example of docs/adding-an-llm-backend.md (``tests/_plain_http_llm.py``, the guide's code as written) against
a real local HTTP server, with the guarantees every served call gets."""

from __future__ import annotations

import importlib.metadata
import json
import re
from collections.abc import Iterator

import pytest
from _http_replies import Reply, completion, scripted_server
from _paths import REPO
from _plain_http_llm import PlainHTTPChatLLM

from retrievekit.core.errors import InvalidInputError, LLMOutputError, LLMUnavailableError
from retrievekit.core.llm.served_spec import LLM_ENTRY_POINT_GROUP, load_served_llm

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@pytest.fixture(autouse=True)
def plain_http(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An installed package declaring ``plain-http = "_plain_http_llm:served_llm"``, beside the built-in clients."""
    real = importlib.metadata.entry_points
    entry = importlib.metadata.EntryPoint("plain-http", "_plain_http_llm:served_llm", LLM_ENTRY_POINT_GROUP)

    def entry_points(**kwargs: str) -> object:
        found = real(**kwargs)
        return [*found, entry] if kwargs.get("group") == LLM_ENTRY_POINT_GROUP else found

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    yield


def test_the_guide_shows_the_tested_client() -> None:
    guide = (REPO / "docs" / "adding-an-llm-backend.md").read_text()
    block = re.search(r"```python\n# my_backend/llm\.py\n(.*?)```", guide, re.S)
    assert block is not None and block.group(1) == (REPO / "tests" / "_plain_http_llm.py").read_text()


def test_a_json_call_goes_through_the_plugged_in_client_with_its_limits_and_schema() -> None:
    with scripted_server([completion('{"ok": true}')]) as srv:
        llm = load_served_llm(f"plain-http:m@{srv.url}")
        assert isinstance(llm, PlainHTTPChatLLM)
        assert llm.complete_json("Is it ok?", SCHEMA, max_tokens=8).value == {"ok": True}
    sent = srv.requests[0]
    assert (sent["model"], sent["max_tokens"], sent["temperature"]) == ("m", 8, 0.0)
    assert sent["response_format"]["type"] == "json_schema" and sent["messages"][-1]["content"] == "Is it ok?"


def test_the_call_policy_retries_refuses_and_types_what_the_client_raises() -> None:
    replies = [Reply(status=503, body=b"busy"), completion("hello"), Reply(status=404, body=b"no such model")]
    with scripted_server([*replies, Reply(body=json.dumps({"choices": []}).encode())]) as srv:
        llm = load_served_llm(f"plain-http:m@{srv.url}")
        assert llm.complete("hi", max_tokens=5).text == "hello"  # 503: retried once
        with pytest.raises(
            LLMUnavailableError, match=rf"{re.escape(srv.url)} \(model m\) refused the request \(HTTP 404\)"
        ):
            llm.complete("hi", max_tokens=5)
        assert len(srv.requests) == 3  # a 404 is not retried
        with pytest.raises(LLMOutputError, match=r"could not be read \(IndexError"):
            llm.complete("hi", max_tokens=5)


def test_nothing_listening_and_an_unknown_client_are_typed_errors() -> None:
    with scripted_server([completion("x")]) as srv:
        url = srv.url  # a port that was free a moment ago, closed now
    with pytest.raises(LLMUnavailableError, match=rf"{re.escape(url)} \(model m\) did not answer after 3 request\(s\)"):
        load_served_llm(f"plain-http:m@{url}").complete("hi")
    with pytest.raises(InvalidInputError, match="unknown served-LLM client 'nope'; available: .*plain-http"):
        load_served_llm("nope:m@http://127.0.0.1:1/v1")
