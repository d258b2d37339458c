"""What ``serve`` (and every command taking ``--device``) refuses before anything loads or listens, each as a short
error and exit 2, never a traceback: a public bind without a key, a host name with a port, sizes that are not
finite or not bounded, a device this torch cannot run on. The Python API refuses the same settings."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.cli.device import check_device
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.serving.settings import MIB, ServeSettings

runner = CliRunner()


@pytest.fixture
def never_serves(monkeypatch: pytest.MonkeyPatch) -> dict:
    from ragtruth_spans.serving import server

    seen: dict = {}
    monkeypatch.setattr(server, "run", lambda app, settings, log_level: seen.update(settings=settings))
    return seen


def _refused(args: list[str], *expected: str) -> None:
    result = runner.invoke(app, ["serve", "--model", "numbers", *args])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output, result.output
    for text in expected:
        assert text in result.output, result.output


def test_a_public_bind_without_a_key_refuses_to_start(never_serves: dict) -> None:
    _refused(["--host", "0.0.0.0"], "--api-key-env is not set", "--allow-public-without-key")
    _refused(["--host", "192.168.1.4", "--upstream", "http://127.0.0.1:9/v1"], "--api-key-env is not set")
    assert not never_serves
    result = runner.invoke(app, ["serve", "--model", "numbers", "--host", "0.0.0.0", "--allow-public-without-key"])
    assert result.exit_code == 0, result.output
    assert never_serves["settings"].api_key is None


def test_the_gate_never_relays_its_upstream_key_from_a_public_bind_without_its_own(
        never_serves: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPSTREAM_TEST_KEY", "sk-operator")
    _refused(["--host", "0.0.0.0", "--upstream", "http://127.0.0.1:9/v1", "--upstream-key-env", "UPSTREAM_TEST_KEY",
              "--allow-public-without-key"], "would send the upstream key", "--api-key-env")
    assert not never_serves


def test_allowed_host_is_repeatable_and_checked(never_serves: dict) -> None:
    result = runner.invoke(app, ["serve", "--model", "numbers", "--allowed-host", "Gate.LAN", "--allowed-host", "::1"])
    assert result.exit_code == 0, result.output
    assert never_serves["settings"].allowed_hosts == ("gate.lan", "[::1]")
    _refused(["--allowed-host", "gate.lan:8000"], "--allowed-host", "without a port")


@pytest.mark.parametrize("flag", ["--max-body-mb", "--context-cache-mb"])
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "-1", "1e300", "1e400"])
def test_sizes_that_are_not_finite_or_not_bounded_are_refused(never_serves: dict, flag: str, value: str) -> None:
    _refused([flag, value], flag)
    assert not never_serves


@pytest.mark.parametrize(("field", "value"), [
    ("max_body_bytes", math.inf), ("max_body_bytes", math.nan), ("max_body_bytes", 2048 * MIB),
    ("context_cache_bytes", math.inf), ("context_cache_bytes", -1), ("header_timeout", math.inf),
    ("upstream_timeout", math.nan), ("max_wait_ms", 1e300), ("block_above", math.nan)])
def test_the_python_api_refuses_the_same_numbers(field: str, value: float) -> None:
    with pytest.raises(InputError, match=ServeSettings.flag(field)):
        ServeSettings(**{field: value})


def test_sizes_within_bounds_are_converted() -> None:
    assert ServeSettings(max_body_bytes=1024 * MIB).max_body_bytes == 1024 * MIB
    result = runner.invoke(app, ["serve", "--help"])
    assert result.exit_code == 0 and "--allowed-host" in result.output


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "meta", "gpu", "cuda:x"])
def test_a_device_this_torch_cannot_run_on_is_a_short_error_for_every_command(
        device: str, monkeypatch: pytest.MonkeyPatch, never_serves: dict) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a CPU-only machine, wherever the test runs
    item = ["--context", "It opened in 1999.", "--response", "It opened in 1998.", "--task", "Summary"]
    for command in (["serve"], ["detect", *item]):
        result = runner.invoke(app, [*command, "--model", "sim-overlap", "--device", device])
        assert result.exit_code == 2, (command, result.output)
        assert "--device" in result.output and "Traceback" not in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert not never_serves


def test_a_gpu_index_past_the_gpus_there_are_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    check_device("cuda:1")
    with pytest.raises(InputError, match="there are 2 GPU"):
        check_device("cuda:2")
    check_device("cpu")
