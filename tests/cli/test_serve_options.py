"""``serve``'s options are the fields of ``ServeSettings``: one declaration for the command line and the Python
API (flag, help, default, bounds), gathered back into one settings object."""

from __future__ import annotations

import dataclasses

import pytest
import typer
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.serving.settings import ServeSettings

runner = CliRunner()


def _serve_params() -> dict[str, object]:
    command = typer.main.get_command(app).commands["serve"]
    return {param.name: param for param in command.params}


def test_every_setting_is_an_option_with_its_field_help_and_default() -> None:
    params = _serve_params()
    for field in dataclasses.fields(ServeSettings):
        param = params[field.name]
        assert param.help == field.metadata["help"], field.name
        assert ServeSettings.flag(field.name) in param.opts, field.name
        assert param.default == field.metadata["cli_default"], field.name
    assert params["max_body_bytes"].default == 16.0 and ServeSettings().max_body_bytes == 16 * 1024 * 1024


def test_the_command_receives_one_settings_object(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtruth_spans.serving import server

    seen = {}
    monkeypatch.setattr(server, "run", lambda app, settings, log_level: seen.update(settings=settings))
    monkeypatch.setenv("SERVE_TEST_KEY", "k1")
    result = runner.invoke(app, ["serve", "--model", "numbers", "--max-items", "3", "--max-body-mb", "0.5",
                                 "--host", "0.0.0.0", "--api-key-env", "SERVE_TEST_KEY"])
    assert result.exit_code == 0, result.output
    settings = seen["settings"]
    assert (settings.max_items, settings.max_body_bytes, settings.api_key) == (3, 512 * 1024, "k1")
    assert settings.ui is False  # a public host shows no page unless --ui is given


def test_settings_that_cannot_serve_are_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["serve", "--model", "numbers", "--max-queue", "2", "--max-items", "8"])
    assert result.exit_code == 2
    assert "--max-queue 2 is smaller than --max-items 8" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["serve", "--model", "numbers", "--evidence-mode", "psychic"])
    assert result.exit_code == 2 and "evidence mode" in result.output
