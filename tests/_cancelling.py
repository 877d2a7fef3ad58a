"""What the awaited paths' cancellation tests share: cancel tasks once their requests are under way, then check that
the scripted server (:mod:`_async_llm_server`) heard nothing more and that no loop error was printed.

``cancel_under_way`` waits for the server's count of arrivals, cancels the tasks and gathers what each ended with;
``after_the_cancel`` reads the server's counters a second later and asserts that no request arrived after the cancel;
``assert_no_loop_errors`` asserts that nothing printed ``Event loop is closed`` or a traceback meanwhile.

A loop closed by hand: ``unraisable_caught`` collects what Python would print as "Exception ignored in ..." (which
pytest's own hook hides), ``close_with_calls_in_flight`` starts calls on a loop run by hand and closes it with them
in flight, without shutting its generators down, and ``assert_nothing_printed`` checks all three channels.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any

from _async_llm_server import LLMServer, stats


async def cancel_under_way(
    tasks: Sequence[asyncio.Task[Any]], server: LLMServer, *, arrived: int, within: float = 30.0
) -> tuple[float, list[Any]]:
    """Once ``server`` has seen ``arrived`` requests (or ``within`` seconds passed), cancel ``tasks`` and gather
    them: the cancel's ``time.monotonic()`` and what each task ended with (a ``CancelledError``, or its result)."""
    deadline = time.monotonic() + within
    while len((await asyncio.to_thread(stats, server))["arrivals"]) < arrived and time.monotonic() < deadline:
        await asyncio.sleep(0.1)  # until the requests are under way
    for t in tasks:
        t.cancel()
    cancelled_at = time.monotonic()
    return cancelled_at, await asyncio.gather(*tasks, return_exceptions=True)


def after_the_cancel(server: LLMServer, cancelled_at: float, *, arrivals: str = "arrivals") -> dict[str, Any]:
    """``server``'s counters a second after the cancel (garbage collected first, so a dropped client closes), once
    it is asserted that none of its ``arrivals`` came more than 0.5 s after ``cancelled_at``."""
    gc.collect()
    time.sleep(1.0)
    got = stats(server)
    late = [t for t in got[arrivals] if t > cancelled_at + 0.5]
    assert late == [], f"{len(late)} requests arrived after the cancel"
    return got


def assert_no_loop_errors(capfd: Any) -> None:
    """Nothing printed ``Event loop is closed`` or a traceback (a request left behind by a closed loop does)."""
    out, err = capfd.readouterr()
    assert "Event loop is closed" not in out + err and "Traceback" not in out + err, out + err


@contextlib.contextmanager
def unraisable_caught() -> Iterator[list[Any]]:
    """The ``sys.unraisablehook`` calls made inside the block (what Python would print as "Exception ignored")."""
    caught: list[Any] = []
    hook, sys.unraisablehook = sys.unraisablehook, caught.append
    try:
        yield caught
    finally:
        sys.unraisablehook = hook


def close_with_calls_in_flight(
    call: Callable[[Any], Coroutine[Any, Any, Any]], args: Sequence[Any], *, after: float = 0.15
) -> None:
    """Run ``call(a)`` for each of ``args`` as tasks of a loop run by hand for ``after`` seconds, then close the loop
    with them in flight, without shutting its generators down, and collect them."""
    loop = asyncio.new_event_loop()
    tasks = [loop.create_task(call(a)) for a in args]
    loop.run_until_complete(asyncio.sleep(after))
    loop.close()
    del tasks, loop
    gc.collect()


def assert_nothing_printed(capfd: Any, caplog: Any, unraisable: Sequence[Any]) -> None:
    """No unraisable exception, nothing printed about a closed loop or a traceback, and no "Unclosed" client session
    or connector in asyncio's log (the closed loop's clients are let go quietly at the next loop's first request)."""
    assert not unraisable, [f"{u.exc_type.__name__}: {u.exc_value} in {u.object!r}" for u in unraisable]
    out, err = capfd.readouterr()
    for noise in ("Event loop is closed", "Exception ignored", "Traceback", "Task was destroyed"):
        assert noise not in out + err, out + err
    unclosed = [r.getMessage() for r in caplog.records if "Unclosed" in r.getMessage()]
    assert not unclosed, unclosed
