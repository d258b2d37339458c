"""`ragtruth-spans predict --model llm-judge --option ...` end to end against the scripted server, then evaluate;
a judge directory by path; option errors as one line and exit 2."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.pipeline.predict import meta_path


def squash(text: str) -> str:
    return "".join(text.split())


def judge_args(server, cache_dir, *extra: str) -> list[str]:
    options = [f"base_url={server.base_url}", "model=judge-test", f"cache_dir={cache_dir}", "backoff_base=0.01",
               *extra]
    return [arg for option in options for arg in ("--option", option)]


def test_predict_with_the_judge_then_resume_then_evaluate(judge_server, sample_test_file, tmp_path):
    data, records = sample_test_file
    out = tmp_path / "pred.jsonl"
    runner = CliRunner()
    judge_server.script({"content": "no idea"})  # the first request gets garbage: counted, not fatal
    args = ["predict", "--model", "llm-judge", "--data", str(data), "--out", str(out), "--chunk-size", "3",
            *judge_args(judge_server, tmp_path / "cache", "mode=claims", "claims_per_request=1", "extra_body.top_k=5")]
    result = runner.invoke(app, args)

    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == sorted(r.id for r in records)
    assert sum("error" in line for line in lines) == 1
    assert sum(line["malformed"] for line in lines) == 1
    sent = judge_server.requests()
    assert sum(line["requests"] for line in lines) == len(sent) > len(records)  # several claims requests
    assert all(r["body"]["top_k"] == 5 and r["body"]["model"] == "judge-test" for r in sent)
    assert "malformed: 1" in result.output and "detector failures: 1" in result.output
    meta = json.loads(meta_path(out).read_text())
    assert meta["detector"]["kind"] == "llm-judge" and meta["detector"]["mode"] == "claims"
    assert meta["detector"]["extra_body"] == {"top_k": 5}
    predictions = read_prediction_file(out, {r.id for r in records})
    assert len(predictions.errors) == 1 and len(predictions.response_scores) == len(records) - 1

    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert len(judge_server.requests()) == len(sent)  # every id was done: nothing sent

    other = runner.invoke(app, [*args[:-2], "--option", "extra_body.top_k=6"])
    assert other.exit_code == 2 and "differsin:extra_body" in squash(other.output)

    evaluated = runner.invoke(app, ["evaluate", "--gold", str(data), "--pred", str(out)])
    assert evaluated.exit_code == 0, evaluated.output


def test_predict_with_a_judge_directory(judge_server, sample_test_file, tmp_path):
    data, records = sample_test_file
    judge_dir = tmp_path / "judges" / "test-judge"
    judge_dir.mkdir(parents=True)
    (judge_dir / "recipe.yaml").write_text(f"kind: llm-judge\nbase_url: {judge_server.base_url}\nmodel: judge-test\n"
                                           "mode: span\nprompt_version: ragtruth-span-1\ntemperature: 0.0\n")
    out = tmp_path / "pred.jsonl"
    result = CliRunner().invoke(app, ["predict", "--model", str(judge_dir), "--data", str(data), "--out", str(out),
                                      "--option", "concurrency=2"])

    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == len(records) == len(judge_server.requests())
    assert list((judge_dir / "cache").rglob("*.json"))  # a judge directory keeps its own cache


def test_option_errors_are_one_line(judge_server, sample_test_file, tmp_path):
    data, _ = sample_test_file
    runner = CliRunner()
    base = ["predict", "--model", "llm-judge", "--data", str(data), "--out", str(tmp_path / "p.jsonl")]
    cases = [
        (judge_args(judge_server, tmp_path, "temperature=hot"), "field'temperature'"),
        (["--option", "novalue"], "--option'novalue'isnotoftheformkey=value"),
        (["--device", "cpu", "--option", "device=cpu"], "devicegivenbothasaflagandas--option"),
        (["--option", "model=m"], "anllm-judgeneedsbase_url"),
        (judge_args(judge_server, tmp_path, "api_key=sk-1"), "option(s)api_keydonotapplytoallm-judge"),
        (judge_args(judge_server, tmp_path, "model=judge-test"), "modelisgiventwice"),
    ]
    for extra, message in cases:
        result = runner.invoke(app, base + extra)
        assert result.exit_code == 2, result.output
        assert message in squash(result.output) and "Traceback" not in result.output
    assert judge_server.requests() == []
