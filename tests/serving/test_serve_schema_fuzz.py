"""The OpenAPI schema and the service agree (a property-based API fuzzer, schemathesis, against the app in
process, bounded in examples and time): no 5xx, every answer fits its own documented schema and status, and no
request the schema allows is refused — except for the rules across fields that no JSON Schema keyword can state and
the schema gives in words (a 413 over a limit on sums: characters per item, per request; a 422 for two candidates
of one id), which the check recomputes."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from server_thread import EchoDetector

from ragtruth_spans.serving.app import ServeSettings, create_app

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, Phase, settings  # noqa: E402 (after the skip: hypothesis comes with it)
from schemathesis.checks import (  # noqa: E402
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

LIMITS = ServeSettings(max_items=3, max_chars=300, max_request_chars=500, max_evidence_items=2,
                       max_evidence_chars=400, max_queue=16, allowed_hosts=("testserver",))  # the test client's
APP = create_app(EchoDetector(), settings=LIMITS)


class OneLifespan:
    """``APP`` whose lifespan (the micro-batcher) runs once, for the module (the fixture below), not once per
    operation as schemathesis would run it."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await APP(scope, receive, send)
            return
        while True:
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            if message["type"] == "lifespan.shutdown":
                return


SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", OneLifespan())


@pytest.fixture(scope="module", autouse=True)
def running_app():
    with TestClient(APP):  # the real lifespan: the micro-batcher runs for the whole module
        yield


def _chars(item: Any, keys: tuple[str, ...]) -> int:
    return sum(len(item[k]) for k in keys if isinstance(item, dict) and isinstance(item.get(k), str))


def over_a_sum_limit(path: str, body: Any) -> bool:
    """Whether a schema-valid ``body`` is over one of the limits on sums (the 413s the schema describes only in
    words)."""
    if path == "/v1/select":
        shared = _chars(body, ("context", "question"))
        own = [len(c) if isinstance(c, str) else _chars(c, ("response",)) for c in body["candidates"]]
        return any(shared + n > LIMITS.max_chars for n in own) or shared * len(own) + sum(own) > \
            LIMITS.max_request_chars
    items = body if isinstance(body, list) else [body]
    sizes = [_chars(i, ("context", "question", "response")) for i in items]
    evidence = [_chars(i, ("context",)) for i in items if i.get("evidence") is True]
    return (max(sizes) > LIMITS.max_chars or sum(sizes) > LIMITS.max_request_chars
            or len(evidence) > LIMITS.max_evidence_items or sum(evidence) > LIMITS.max_evidence_chars)


def duplicate_ids(path: str, body: Any) -> bool:
    """Whether two candidates of a ``/v1/select`` body share an id (one without an id is known by its index):
    a rule across candidates, described in the schema in words."""
    if path != "/v1/select":
        return False
    names = [str(c["id"]) if isinstance(c, dict) and c.get("id") is not None else str(i)
             for i, c in enumerate(body["candidates"])]
    return len(set(names)) < len(names)


def schema_valid_is_accepted(ctx: Any, response: Any, case: Any) -> bool | None:
    """A request the schema allows gets 200, or 413 when over a limit on sums, or 422 for two candidates of one
    id."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code == 200:
        return None
    if response.status_code == 413 and over_a_sum_limit(case.path, case.body):
        return None
    if response.status_code == 422 and duplicate_ids(case.path, case.body) and "duplicate candidate id" in \
            response.text:
        return None
    raise AssertionError(f"{case.method} {case.path}: a schema-valid request was refused with "
                         f"{response.status_code}: {response.text[:300]}")


@pytest.mark.slow
@SCHEMA.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_the_service_keeps_to_its_schema(case) -> None:
    case.call_and_validate(checks=[not_a_server_error, response_schema_conformance, status_code_conformance,
                                   schema_valid_is_accepted])


def test_the_schema_states_the_limits_and_the_blank_rule() -> None:
    with TestClient(create_app(EchoDetector(), settings=LIMITS)) as client:
        spec = client.get("/openapi.json").json()
        detect = spec["paths"]["/v1/detect"]["post"]
        body = detect["requestBody"]["content"]["application/json"]["schema"]
        [many] = [s for s in body["anyOf"] if s.get("type") == "array"]
        assert (many["minItems"], many["maxItems"]) == (1, 3)  # [] is refused, and the schema says so
        item = many["items"]["properties"]
        assert item["response"]["maxLength"] == 300 and item["response"]["pattern"].startswith("[^")
        assert {"408", "413", "415", "422", "500", "503"} <= set(detect["responses"])
        for blank in ("   ", "\n", "\u00a0"):
            answer = client.post("/v1/detect", json={"context": "c", "response": blank, "task": "QA"})
            assert answer.status_code == 422 and "blank" in answer.text
        assert client.post("/v1/detect", json=[]).status_code == 422


@pytest.mark.slow
def test_the_not_blank_pattern_is_the_blank_rule() -> None:
    from ragtruth_spans.serving.schemas import NOT_BLANK_PATTERN, not_blank_pattern

    assert not_blank_pattern() == NOT_BLANK_PATTERN  # recomputed from is_blank over every assigned plane
