"""The generative detector (HF backend) end to end on the overfit tiny model; confidence scores; the vLLM
backend's plumbing with a stand-in engine; the run directory reader."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.core.types import Span
from ragtruth_spans.detectors.generative.results import detection_from_text, prompt_budget
from ragtruth_spans.detectors.generative.run_dir import ModelDir
from ragtruth_spans.detectors.generative.scoring import (
    Generation,
    clean_completion_ids,
    hallucination_score,
    item_scores,
    locate_items,
)
from ragtruth_spans.detectors.generative.vllm import import_vllm
from ragtruth_spans.detectors.shared.parsing import parse_generation
from ragtruth_spans.evaluation import evaluate
from ragtruth_spans.evaluation.metrics import auroc

runner = CliRunner()


def test_model_dir_needs_an_adapter_and_a_recipe(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no adapter_config.json"):
        ModelDir.read(tmp_path)
    (tmp_path / "adapter_config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="recipe.yaml"):
        ModelDir.read(tmp_path)


def test_prompt_budget_leaves_room_for_the_response() -> None:
    assert prompt_budget(4096, 512) == 3584
    assert prompt_budget(512, 512) == 384  # the generation reserve never takes more than a quarter
    assert prompt_budget(768, 128) == 640
    assert prompt_budget(None, 512) is None


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_vllm_backend_missing_gives_install_hint(sample_test_file, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"pip install 'ragtruth-spans\[vllm\]'"):
        import_vllm()
    data, _ = sample_test_file
    result = runner.invoke(app, ["predict", "--model", str(tmp_path), "--data", str(data), "--out",
                                 str(tmp_path / "p.jsonl"), "--backend", "vllm"])
    assert result.exit_code == 2
    assert "ragtruth-spans[vllm]" in result.output


# --- end to end on the tiny model overfit by the training tests ------------------------------------------

def test_predict_on_overfit_model_reproduces_gold_spans(overfit_run, tmp_path: Path) -> None:
    records = overfit_run.records
    data = tmp_path / "overfit.jsonl"
    write_records(data, records)
    out = tmp_path / "pred.jsonl"
    result = runner.invoke(app, ["predict", "--model", str(overfit_run.output_dir), "--data", str(data),
                                 "--out", str(out), "--batch-size", "4", "--max-new-tokens", "128"])
    assert result.exit_code == 0, result.output
    assert f"responses: {len(records)}" in result.output and "detector failures: 0" in result.output
    predictions = read_prediction_file(out, response_lengths={r.id: len(r.response) for r in records}).spans
    for record in records:
        assert [(s.start, s.end, s.type) for s in predictions[record.id]] == \
               [(s.start, s.end, s.type) for s in record.spans], record.id
    report = evaluate(records, predictions)
    assert report.overall["span"]["f1"] == pytest.approx(1.0)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(0.0 <= row["score"] <= 1.0 for row in rows)
    assert all(0.0 <= span["score"] <= 1.0 for row in rows for span in row["spans"])
    response_scores = read_prediction_file(out).response_scores
    assert set(response_scores) == {r.id for r in records}
    scored = evaluate(records, predictions, response_scores=response_scores)
    assert scored.overall["auroc"] == 1.0 and scored.settings["auroc_scores"] == "response"
    cli_report = tmp_path / "report.json"
    evaluated = runner.invoke(app, ["evaluate", "--gold", str(data), "--pred", str(out), "--json", str(cli_report)])
    assert evaluated.exit_code == 0, evaluated.output
    assert json.loads(cli_report.read_text(encoding="utf-8"))["settings"]["auroc_scores"] == "response"

    rerun = runner.invoke(app, ["predict", "--model", str(overfit_run.output_dir), "--data", str(data),
                                "--out", str(out), "--max-new-tokens", "128"])
    assert rerun.exit_code == 0 and f"{len(records)} skipped" in rerun.output
    meta = json.loads((tmp_path / "pred.jsonl.meta.json").read_text(encoding="utf-8"))
    assert meta["detector"]["kind"] == "generative" and meta["detector"]["fingerprint"] and meta["data_sha256"]
    other = runner.invoke(app, ["predict", "--model", str(overfit_run.output_dir), "--data", str(data),
                                "--out", str(out)], terminal_width=300)  # default max_new_tokens: 512
    assert other.exit_code == 2 and "differs in: max_new_tokens" in other.output


def test_detect_and_detect_batch_agree_with_gold(overfit_run) -> None:
    from ragtruth_spans.detectors.generative.hf import GenerativeDetector

    detector = GenerativeDetector.from_pretrained(overfit_run.output_dir, device="cpu", max_new_tokens=128)
    record = next(r for r in overfit_run.records if r.spans)
    spans = detector.detect(context=record.context, response=record.response, task=record.task_type,
                            question=record.question).spans
    assert [(s.start, s.end, s.type) for s in spans] == [(s.start, s.end, s.type) for s in record.spans]
    assert all(s.text == record.response[s.start:s.end] for s in spans)
    detector.batch_size = 3
    batch = detector.detect_batch(overfit_run.records)
    assert all(r.diagnostics["parse_ok"] and r.ok for r in batch)
    assert [[Span(s.start, s.end) for s in r.spans] for r in batch] == \
           [[Span(s.start, s.end) for s in rec.spans] for rec in overfit_run.records]


def test_a_response_too_long_for_the_window_fails_only_its_item(overfit_run) -> None:
    from ragtruth_spans.detectors.generative.hf import GenerativeDetector

    detector = GenerativeDetector.from_pretrained(overfit_run.output_dir, device="cpu", max_new_tokens=128)
    record = next(r for r in overfit_run.records if r.spans)
    long_item = {"context": record.context, "response": record.response + " padding" * 400,
                 "task": record.task_type, "question": record.question}
    detector.batch_size = 2
    results = detector.detect_batch([long_item, record])
    assert results[0].diagnostics["too_long"] and not results[0].diagnostics["parse_ok"] and results[0].spans == []
    assert results[0].score is None and results[1].score is not None
    assert "not generated" in results[0].error and results[0].diagnostics["too_long"] is True
    assert results[1].ok and [(s.start, s.end) for s in results[1].spans] == \
           [(s.start, s.end) for s in record.spans]


# --- confidence scores ----------------------------------------------------------------------------------

class CharTokenizer:
    """One token per character (id = code point; 0 is the special end-of-sequence token)."""

    eos_token_id = 0

    def decode(self, ids, skip_special_tokens=True) -> str:
        return "".join(chr(i) for i in ids if not (skip_special_tokens and i == 0))


def char_generation(text: str, probs: list[float]) -> Generation:
    return Generation(text=text, token_ids=[ord(c) for c in text] + [0], token_probs=probs)


def test_locate_items_escaped_form_left_to_right_and_not_found() -> None:
    raw = '[{"text": "say \\"hi\\"", "type": "Evident Conflict"}, {"text": "Evident", "type": "Subtle Conflict"}]'
    items = parse_generation(raw).items
    assert [i.text for i in items] == ['say "hi"', "Evident"]
    first, second = locate_items(raw, items)
    assert raw[first[0]:first[1]] == 'say \\"hi\\"'
    # "Evident" also occurs in the first item's type: the quoted value after the first item is the one found
    assert raw[second[0]:second[1]] == "Evident" and raw[second[0] - 1] == '"' and second[0] > raw.index("Conflict")
    single_quoted = parse_generation("[{'text': \"it's\", 'type': 'Evident Conflict'}, {'text': 'caf\\xe9'}]")
    assert [i.text for i in single_quoted.items] == ["it's", "café"]
    located = locate_items(single_quoted.raw, single_quoted.items)
    assert located[0] is not None and located[1] is None  # "é" written as a Python escape: no form matches


def test_item_scores_mean_probability_of_the_value_tokens_with_fallback() -> None:
    raw = '[{"text": "ab", "type": "Evident Conflict"}]'
    probs = [0.5] * len(raw) + [1.0]  # + end of sequence
    value = raw.index('"ab"') + 1
    probs[value], probs[value + 1] = 0.9, 0.7
    generation = char_generation(raw, probs)
    items = parse_generation(raw).items
    assert item_scores(CharTokenizer(), generation, items) == [pytest.approx(0.8)]
    unlocatable = [type(items[0])(text="zz", type="Evident Conflict")]
    assert item_scores(CharTokenizer(), generation, unlocatable) == [pytest.approx(sum(probs) / len(probs))]


def test_detection_from_text_pairs_item_scores_with_aligned_spans_skipping_unaligned_items() -> None:
    raw = ('[{"text": "opened in 1998", "type": "Evident Conflict"}, {"text": "zebra quartet", "type": '
           '"Evident Conflict"}, {"text": "harbour", "type": "Subtle Conflict"}]')
    result = detection_from_text("The Grand Hotel opened in 1998 on the harbour.", raw,
                                 score_items=lambda items: [0.9, 0.5, 0.6],
                    score=0.75)
    assert [(s.text, s.score) for s in result.spans] == [("opened in 1998", 0.9), ("harbour", 0.6)]
    assert result.diagnostics["unaligned"] == ["zebra quartet"] and result.score == 0.75
    assert result.to_dict()["score"] == 0.75


def test_clean_completion_ids_follow_training_and_stop_at_end_of_turn() -> None:
    from ragtruth_spans.detectors.generative.prompts import build_messages, prompt_token_ids, skeleton_texts
    from ragtruth_spans.models.tiny import train_tokenizer

    tokenizer = train_tokenizer(["The Grand Hotel opened in 1998."], vocab_size=400, skeleton=skeleton_texts())
    messages = build_messages("Summary", "The Grand Hotel opened in 1999.", "The Grand Hotel opened in 1998.")
    prompt = prompt_token_ids(tokenizer, messages)
    completion = clean_completion_ids(tokenizer, messages, prompt, {tokenizer.eos_token_id})
    assert tokenizer.decode(completion) == "[]" + tokenizer.eos_token and completion[-1] == tokenizer.eos_token_id
    tokenizer.chat_template = tokenizer.chat_template.replace("{{ eos_token }}", "{{ eos_token + '\\n' }}")
    assert clean_completion_ids(tokenizer, messages, prompt, {tokenizer.eos_token_id}) == completion
    assert tokenizer.decode(clean_completion_ids(tokenizer, messages, prompt)).endswith(tokenizer.eos_token + "\n")
    assert hallucination_score(0.0) == 0.0 and hallucination_score(-1e9) == 1.0


@pytest.fixture(scope="module")
def overfit_detector(overfit_run):
    from ragtruth_spans.detectors.generative.hf import GenerativeDetector

    return GenerativeDetector.from_pretrained(overfit_run.output_dir, device="cpu", max_new_tokens=128)


def test_scores_on_overfit_model_rank_clean_below_hallucinated(overfit_run, overfit_detector) -> None:
    records = overfit_run.records
    results = overfit_detector.detect_batch(records)
    scores = [r.score for r in results]
    assert all(0.0 <= s <= 1.0 for s in scores)
    for record, result in zip(records, results):
        assert (result.score > 0.5) == bool(record.spans), (record.id, result.score)
        assert len(result.spans) == len(record.spans)
        assert all(0.5 < s.score <= 1.0 for s in result.spans), (record.id, result.spans)  # memorised spans
    assert auroc([bool(r.spans) for r in records], scores) == 1.0


def test_score_clean_false_leaves_response_score_none(overfit_run) -> None:
    from ragtruth_spans.detectors.generative.hf import GenerativeDetector

    detector = GenerativeDetector.from_pretrained(overfit_run.output_dir, device="cpu", max_new_tokens=128,
                                                  score_clean=False)
    results = detector.detect_batch(overfit_run.records[:2])
    assert all(r.score is None and r.to_dict()["score"] is None for r in results)
    assert all(s.score is not None for r in results for s in r.spans)


def test_teacher_forced_clean_probability_equals_greedy_step_probabilities(overfit_run, overfit_detector) -> None:
    import math

    from ragtruth_spans.detectors.generative.prompts import prompt_token_ids
    from ragtruth_spans.detectors.generative.results import item_messages

    detector = overfit_detector
    records = overfit_run.records  # the clean record generates "[]"; the others pad the batch
    messages = [item_messages(detector.tokenizer, r, prompt_budget=detector.prompt_budget)[0] for r in records]
    prompts_ids = [prompt_token_ids(detector.tokenizer, m) for m in messages]
    generations = detector.generate_ids(prompts_ids)
    clean = next(i for i, r in enumerate(records) if not r.spans)
    assert generations[clean].text == "[]"
    completions = [clean_completion_ids(detector.tokenizer, m, p, detector.stop_ids)
                   for m, p in zip(messages, prompts_ids)]
    assert generations[clean].token_ids == completions[clean]
    logprobs = detector.completion_logprobs(prompts_ids, completions)
    assert math.exp(logprobs[clean]) == pytest.approx(math.prod(generations[clean].token_probs), abs=1e-4)
    result = detector.detect_batch(records)[clean]
    assert result.score == pytest.approx(1 - math.prod(generations[clean].token_probs), abs=1e-4)


def test_vllm_detector_scores_from_logprobs_with_a_stand_in_engine() -> None:
    """The vLLM backend's score plumbing on duck-typed vLLM outputs (vllm itself is not installed here)."""
    import math
    from types import SimpleNamespace as NS

    from ragtruth_spans.detectors.generative.prompts import skeleton_texts
    from ragtruth_spans.detectors.generative.vllm import VLLMDetector
    from ragtruth_spans.models.tiny import train_tokenizer

    tokenizer = train_tokenizer(["The Grand Hotel opened in 1998."], vocab_size=400, skeleton=skeleton_texts())
    target = '[{"text": "opened in 1998", "type": "Evident Conflict"}]'
    outputs = {"spans": (target, tokenizer(target, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]),
               "clean": ("[]", tokenizer("[]", add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])}

    class Engine:
        def __init__(self, answer: str) -> None:
            self.text, self.ids = outputs[answer]
            self.scoring_calls = 0

        def generate(self, prompts, params, lora_request=None, use_tqdm=False):
            if params.prompt_logprobs is not None:  # scoring call: every prompt token has probability 1/2
                self.scoring_calls += 1
                return [NS(prompt_token_ids=p["prompt_token_ids"],
                           prompt_logprobs=[None] + [{t: NS(logprob=math.log(0.5))} for t in p["prompt_token_ids"][1:]])
                        for p in prompts]
            return [NS(outputs=[NS(text=self.text, token_ids=self.ids,
                                   logprobs=[{t: NS(logprob=math.log(0.8))} for t in self.ids])]) for _ in prompts]

    engine = Engine("spans")
    detector = VLLMDetector(engine, tokenizer, None, NS(prompt_logprobs=None), max_new_tokens=64, max_length=None,
                            score_params=NS(prompt_logprobs=0))
    item = {"task": "Summary", "context": "The Grand Hotel opened in 1999.", "response": "It opened in 1998 here."}
    [result] = detector.detect_batch([item])
    n_clean = len(outputs["clean"][1])  # "[]" + EOS
    assert result.score == pytest.approx(1 - 0.5 ** n_clean) and engine.scoring_calls == 1
    assert [(s.text, s.score) for s in result.spans] == [("opened in 1998", pytest.approx(0.8))]
    # a clean greedy output carries P(clean) itself: no scoring call
    detector.llm = engine = Engine("clean")
    [clean] = detector.detect_batch([item])
    assert clean.spans == [] and clean.score == pytest.approx(1 - 0.8 ** n_clean) and engine.scoring_calls == 0
    detector.score_params = None
    assert detector.detect_batch([item])[0].score is None
