"""The overlap guard: a run records fingerprints of what it trained or tuned on (never the text), and
``evaluate`` counts the gold responses that share a source or a response with it, reports the figures without
them, drops them with ``--drop-overlap``, and says "overlap unknown" for runs written before the guard."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import make_record
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_jsonl, write_records
from ragtruth_spans.evaluation.overlap import (
    TRAINED_ON_FILE,
    TrainedOn,
    TrainingData,
    count_overlap,
    normalise,
    text_fingerprint,
)

HOTEL = ("The Grand Hotel opened in 1999 on the harbour front of Lisbon. It has 120 rooms and a rooftop pool. "
         "Guests praise the quiet rooms and the friendly staff at the front desk.")
MUSEUM = "The city museum opened in 1880. It holds 4,000 paintings and is closed on Mondays."
PARK = "The park covers 40 hectares. It has two lakes and a playground near the north gate."


def dev_records():
    """What the similarity run tunes on (its ``trained_on``): three responses about one hotel."""
    return [make_record("a", "Summary", HOTEL, "It has 120 rooms and a rooftop pool.", [], split="dev"),
            make_record("b", "Summary", HOTEL, "Guests praise the quiet rooms but hate the loud bar.",
                        [("hate the loud bar.", "Evident Baseless Info")], split="dev"),
            make_record("c", "Summary", HOTEL, "Breakfast costs nine euros.",
                        [("Breakfast costs nine euros.", "Evident Baseless Info")], split="dev")]


def gold_records():
    """t1 shares the hotel (a source), t2 repeats response a (case and spacing aside), t3 and t4 are new."""
    return [make_record("t1", "Summary", HOTEL, "It has 121 rooms.", [("121 rooms", "Evident Conflict")],
                        split="test"),
            make_record("t2", "Summary", MUSEUM, "  it HAS 120 rooms\nand a rooftop   pool. ", [], split="test"),
            make_record("t3", "Summary", MUSEUM, "It holds 5,000 paintings.", [("5,000", "Evident Conflict")],
                        split="test"),
            make_record("t4", "Summary", PARK, "The park has two lakes.", [], split="test")]


def test_fingerprints_ignore_case_spacing_and_composition_and_keep_no_text():
    assert normalise(" Ｃafe\u0301  Déjà\nVU ") == normalise("ｃafé déjà vu") == "ｃafé déjà vu"
    assert text_fingerprint("It HAS 120\trooms.") == text_fingerprint("it has 120 rooms.")
    assert text_fingerprint("It has 120 rooms.") != text_fingerprint("It has 121 rooms.")
    trained = TrainedOn.from_records({"train": dev_records()[:2], "eval": dev_records()[2:]})
    assert trained.records == {"train": 2, "eval": 1} and len(trained.sources) == 1 and len(trained.responses) == 3
    text = json.dumps(trained.to_dict())
    assert "hotel" not in text.lower() and "rooms" not in text


def test_count_overlap_by_source_by_response_and_either():
    training = TrainingData("known", "run", "", TrainedOn.from_records({"eval": dev_records()}))
    overlap = count_overlap(gold_records(), training)
    assert (overlap.shared_source, overlap.shared_response, set(overlap.ids)) == (1, 1, {"t1", "t2"})
    assert overlap.to_dict()["overlapping"] == 2 and overlap.to_dict()["gold_responses"] == 4
    unknown = count_overlap(gold_records(), TrainingData("unknown", "old-run", "no trained_on.json"))
    assert unknown.to_dict()["overlapping"] is None and unknown.words() == "overlap unknown: no trained_on.json"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A similarity run tuned on :func:`dev_records`, its predictions on :func:`gold_records` (with the
    ``.meta.json`` that names the run) and the gold file."""
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train
    from ragtruth_spans.pipeline.predict import predict_file

    root = tmp_path_factory.mktemp("overlap")
    write_records(root / "data" / "dev.jsonl", dev_records())
    write_records(root / "data" / "train.jsonl", dev_records()[:1])
    write_records(root / "test.jsonl", gold_records())
    train(load_recipe("all-minilm-l6-v2/similarity-overlap", [f"data.prepared_dir={root / 'data'}",
                                                              f"output_dir={root / 'run'}"]))
    predict_file(root / "run", root / "test.jsonl", root / "pred.jsonl", progress=False)
    return root


def test_a_run_records_what_it_tuned_on_in_its_manifest(trained):
    info = json.loads((trained / "run" / "run_info.json").read_text())
    assert TRAINED_ON_FILE in info["files_sha256"]
    assert info["trained_on"] == {"file": TRAINED_ON_FILE, "records": {"eval": 3}, "sources": 1, "responses": 3}
    saved = TrainedOn.read(trained / "run" / TRAINED_ON_FILE)
    assert saved == TrainedOn.from_records({"eval": dev_records()})
    assert "Grand Hotel" not in (trained / "run" / TRAINED_ON_FILE).read_text()


def _evaluate(trained: Path, *args: str) -> tuple[dict, str]:
    result = CliRunner().invoke(app, ["evaluate", "--gold", str(trained / "test.jsonl"), "--json",
                                      str(trained / "report.json"), *args])
    assert result.exit_code == 0, result.output
    return json.loads((trained / "report.json").read_text()), result.output


def test_evaluate_counts_the_overlap_and_reports_the_rest(trained):
    report, output = _evaluate(trained, "--pred", str(trained / "pred.jsonl"))
    overlap = report["overlap"]
    assert overlap["status"] == "known" and overlap["detector"].endswith("run")
    assert (overlap["shared_source"], overlap["shared_response"], overlap["overlapping"]) == (1, 1, 2)
    assert report["counts"]["responses"] == 4 and overlap["dropped"] == 0
    assert overlap["rest"]["responses"] == 2 and set(overlap["rest"]["by_task"]) == {"Summary"}
    alone, _ = _evaluate_subset(trained, ["t3", "t4"])
    assert overlap["rest"]["overall"]["span"] == alone["overall"]["span"]
    assert "2 of 4 gold responses overlap the training data" in output and "Without the 2 responses" in output


def _evaluate_subset(trained: Path, ids: list[str]) -> tuple[dict, str]:
    keep = [r for r in gold_records() if r.id in ids]
    write_records(trained / "subset.jsonl", keep)
    lines = [json.loads(line) for line in (trained / "pred.jsonl").read_text().splitlines()]
    write_jsonl(trained / "subset-pred.jsonl", [line for line in lines if line["id"] in ids])
    result = CliRunner().invoke(app, ["evaluate", "--gold", str(trained / "subset.jsonl"), "--pred",
                                      str(trained / "subset-pred.jsonl"), "--json", str(trained / "subset.json")])
    assert result.exit_code == 0, result.output
    return json.loads((trained / "subset.json").read_text()), result.output


def test_drop_overlap_leaves_the_overlapping_responses_out(trained):
    report, _ = _evaluate(trained, "--pred", str(trained / "pred.jsonl"), "--drop-overlap")
    alone, _ = _evaluate_subset(trained, ["t3", "t4"])
    assert report["counts"]["responses"] == 2 and report["overlap"]["dropped"] == 2
    assert report["overall"] == alone["overall"] and report["overlap"]["rest"] is None
    assert any(note.startswith("--drop-overlap: 2 of 4 gold responses") for note in report["notes"])


def test_a_run_written_before_the_guard_says_overlap_unknown(trained, tmp_path):
    old = Path(shutil.copytree(trained / "run", tmp_path / "old-run"))
    (old / TRAINED_ON_FILE).unlink()
    for args in (["--model", str(old)], ["--model", str(old), "--drop-overlap"]):
        report, output = _evaluate(trained, "--pred", str(trained / "pred.jsonl"), *args)
        assert report["overlap"]["status"] == "unknown" and report["overlap"]["overlapping"] is None
        assert report["counts"]["responses"] == 4 and "overlap unknown:" in output
        assert "re-train it to know" in " ".join(report["notes"])


def test_predictions_that_do_not_name_their_detector_and_named_detectors(trained, tmp_path):
    bare = tmp_path / "bare.jsonl"
    shutil.copyfile(trained / "pred.jsonl", bare)
    report, _ = _evaluate(trained, "--pred", str(bare))
    assert report["overlap"]["status"] == "unknown" and "pass --model" in report["overlap"]["reason"]
    report, output = _evaluate(trained, "--pred", str(bare), "--model", "numbers")
    assert report["overlap"]["status"] == "untrained" and "no overlap: numbers" in output
    result = CliRunner().invoke(app, ["evaluate", "--gold", str(trained / "test.jsonl"), "--pred", str(bare),
                                      "--model", "no-such-detector"])
    assert result.exit_code == 2 and "--model" in result.output


def test_a_run_retrained_in_place_is_not_taken_for_the_one_that_predicted(trained, tmp_path):
    from ragtruth_spans.pipeline.trained_on import described_training_data

    meta = json.loads((trained / "pred.jsonl.meta.json").read_text())
    training = described_training_data(meta["detector"] | {"fingerprint": "0" * 64})
    assert training.status == "unknown" and "fingerprint differs" in training.reason


def test_a_changed_fingerprint_file_is_refused(trained, tmp_path):
    from ragtruth_spans.runs.run_dir import read_trained_on

    copy = Path(shutil.copytree(trained / "run", tmp_path / "run"))
    data = json.loads((copy / TRAINED_ON_FILE).read_text())
    (copy / TRAINED_ON_FILE).write_text(json.dumps(data | {"responses": []}))
    with pytest.raises(InputError, match="changed since the run was written"):
        read_trained_on(copy)


def test_report_shows_the_overlap_and_drops_it_for_every_detector(trained):
    out = trained / "report.html"
    args = ["report", "--gold", str(trained / "test.jsonl"), "--pred", str(trained / "pred.jsonl"), "--pred",
            str(trained / "pred.jsonl"), "--name", "run", "--name", "as-numbers", "--model", str(trained / "run"),
            "--model", "numbers", "--out", str(out), "--bootstrap", "0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert 'id="overlap"' in html and "<td>2 of 4</td><td>1</td><td>1</td><td>0</td>" in html
    assert "<td>0 of 4</td>" in html and "(4 responses" in result.output
    result = CliRunner().invoke(app, [*args, "--drop-overlap"])
    assert result.exit_code == 0 and "(2 responses" in result.output
    assert "<td>2 of 4</td><td>1</td><td>1</td><td>2</td>" in out.read_text(encoding="utf-8")
    result = CliRunner().invoke(app, [*args[:-6], "--out", str(out), "--bootstrap", "0"])  # one --model, two --pred
    assert result.exit_code == 2 and "one --model per --pred" in result.output


def test_benchmark_counts_each_detectors_overlap_and_drops_the_union(trained, tmp_path):
    from ragtruth_spans.pipeline.benchmark import parse_detectors, run_benchmark

    specs = parse_detectors(f"{trained / 'run'},numbers")
    payload = run_benchmark(trained / "test.jsonl", specs, tmp_path / "bench", bootstrap=0, progress=False)
    overlaps = {e["label"]: e["report"]["overlap"] for e in payload["detectors"]}
    assert overlaps["run"]["overlapping"] == 2 and overlaps["run"]["rest"]["responses"] == 2
    assert overlaps["numbers"]["status"] == "untrained" and overlaps["numbers"]["overlapping"] == 0
    assert "## Overlap with each detector's training data" in (tmp_path / "bench" / "leaderboard.md").read_text()
    dropped = run_benchmark(trained / "test.jsonl", specs, tmp_path / "dropped", bootstrap=0, progress=False,
                            drop_overlap=True)
    assert {e["report"]["counts"]["responses"] for e in dropped["detectors"]} == {2}  # the same rows for both
    assert dropped["dropped_overlap"] == 2
    tuned = run_benchmark(trained / "test.jsonl", parse_detectors("sim-overlap@dev"), tmp_path / "tuned",
                          dev=trained / "data" / "dev.jsonl", bootstrap=0, progress=False)
    assert tuned["detectors"][0]["report"]["overlap"]["overlapping"] == 2  # tuned on dev: it saw the hotel


def selection_records():
    """Two models per source: both hotel answers share a source with the run's data, museum-a repeats response a."""
    from dataclasses import replace

    bridge = "The bridge is 300 metres long and opened in 1932."
    pairs = [("hotel", HOTEL, "It has 121 rooms.", "It has 120 rooms."),
             ("museum", MUSEUM, "It has 120 rooms and a rooftop pool.", "It holds 5,000 paintings."),
             ("park", PARK, "The park has two lakes.", "The park covers 50 hectares."),
             ("bridge", bridge, "The bridge opened in 1933.", "The bridge is 300 metres long.")]
    return [replace(make_record(f"{name}-{model}", "Summary", context, response, [], split="test"),
                    source_id=name, model=model)
            for name, context, first, second in pairs for model, response in (("A", first), ("B", second))]


def test_select_reports_the_overlap_and_the_rest(trained):
    from ragtruth_spans.pipeline.predict import predict_file

    write_records(trained / "selection.jsonl", selection_records())
    predict_file(trained / "run", trained / "selection.jsonl", trained / "selection-pred.jsonl", progress=False)
    out = trained / "select.json"
    args = ["select", "--gold", str(trained / "selection.jsonl"), "--pred", str(trained / "selection-pred.jsonl"),
            "--models", "A,B", "--bootstrap", "0", "--json", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    overlap = report["overlap"]
    assert (overlap["shared_source"], overlap["shared_response"], overlap["overlapping"]) == (2, 1, 3)
    assert report["sources"]["used"] == 4 and overlap["rest"]["sources"]["used"] == 2
    assert "Without the 3 responses" in result.output and "3 of 8 gold responses overlap" in result.output
    result = CliRunner().invoke(app, [*args, "--drop-overlap"])
    assert result.exit_code == 0, result.output
    dropped = json.loads(out.read_text())
    assert dropped["sources"]["used"] == 2 and dropped["overlap"]["dropped"] == 3 and dropped["overlap"]["rest"] is None
