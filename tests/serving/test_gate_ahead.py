"""A check made ahead (:meth:`Gate.detected`): its detection is reused; one that fails or is dropped while a
sentence check waits on it is made again through the service; a sentence check cancelled itself stays cancelled
and leaves the shared check running."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from ragtruth_spans.serving.body import ServiceError
from ragtruth_spans.serving.gate import Gate


class Service:
    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    async def detect(self, items, wait=0.0):
        self.asked.append(list(items))
        return [f"fresh {item}" for item in items]


def _gate() -> SimpleNamespace:
    return SimpleNamespace(service=Service())


async def _slow(result: str, seconds: float = 0.05) -> str:
    await asyncio.sleep(seconds)
    return result


async def _failing() -> str:
    raise ServiceError(503, "busy")


def test_reused_made_again_when_failed_or_dropped() -> None:
    async def run() -> tuple[list[str], list[list[str]]]:
        gate = _gate()
        kept, failed, dropped = (asyncio.create_task(c) for c in (_slow("ahead a"), _failing(), _slow("x", 5)))
        asyncio.get_running_loop().call_later(0.01, dropped.cancel)  # replaced by a later text while awaited
        found = await Gate.detected(gate, ["a", "b", "c", "d"], [kept, failed, dropped, None], wait=0.0)
        return found, gate.service.asked

    found, asked = asyncio.run(run())
    assert found == ["ahead a", "fresh b", "fresh c", "fresh d"] and asked == [["b", "c", "d"]]


def test_a_cancelled_sentence_check_leaves_the_shared_check_running() -> None:
    async def run() -> tuple[bool, str]:
        gate = _gate()
        shared = asyncio.create_task(_slow("ahead", 0.05))
        waiting = asyncio.create_task(Gate.detected(gate, ["a"], [shared], wait=0.0))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return shared.cancelled(), await shared

    assert asyncio.run(run()) == (False, "ahead")
