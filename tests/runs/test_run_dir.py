"""The run-directory rules: a run resumes only its own fingerprint, a finished run is never rewritten, a foreign
directory is never deleted; and the whole-run training loss."""

from __future__ import annotations

import json
from types import SimpleNamespace

import accelerate
import accelerate.utils
import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_json
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.runs.run_dir import claim_output_dir, run_fingerprint, write_run_files
from ragtruth_spans.training.run import claim_on_main_process, whole_run_train_loss


def recipe(out, **training):
    return validate_recipe({"model": {"name_or_path": "tiny"}, "output_dir": str(out),
                            "training": {"max_steps": 3, **training}})


def test_fingerprint_covers_recipe_and_data_not_where_the_run_goes(tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text('{"id": 1}\n')
    a = run_fingerprint(recipe(tmp_path / "a"), [data])
    assert a == run_fingerprint(recipe(tmp_path / "b"), [data])  # output_dir is not part of it
    assert a != run_fingerprint(recipe(tmp_path / "a", learning_rate=1e-3), [data])
    data.write_text('{"id": 2}\n')
    assert a["fingerprint"] != run_fingerprint(recipe(tmp_path / "a"), [data])["fingerprint"]


def test_claim_rules(tmp_path):
    out = tmp_path / "run"
    fp = run_fingerprint(recipe(out), [])
    assert claim_output_dir(out, fp) is False and (out / "fingerprint.json").is_file()  # new run
    assert claim_output_dir(out, fp) is True  # same settings, unfinished: resume
    (out / "checkpoint-1").mkdir()  # it saved progress (a run with nothing saved restarts, test below)
    other = run_fingerprint(recipe(out, learning_rate=1e-3), [])
    with pytest.raises(InputError, match=r"differs in: recipe\.training\.learning_rate.*--overwrite.*--resume"):
        claim_output_dir(out, other)
    assert claim_output_dir(out, other, resume=True) is True  # the user insists
    write_run_files(out, recipe(out, learning_rate=1e-3), {}, fingerprint=other, trained_on=None)
    info = json.loads((out / "run_info.json").read_text())
    assert info["kind"] == "generative" and info["resumed_with_other_settings"]["started_as"] == fp["fingerprint"]
    with pytest.raises(InputError, match="finished"):
        claim_output_dir(out, fp)
    assert claim_output_dir(out, fp, overwrite=True) is False and not (out / "run_info.json").exists()


def test_a_foreign_directory_is_refused_and_never_deleted(tmp_path):
    out = tmp_path / "photos"
    out.mkdir()
    (out / "holiday.jpg").write_bytes(b"...")
    fp = run_fingerprint(recipe(out), [])
    with pytest.raises(InputError, match="holds no run fingerprint"):
        claim_output_dir(out, fp)
    with pytest.raises(InputError, match="deletes run directories only"):
        claim_output_dir(out, fp, overwrite=True)
    assert (out / "holiday.jpg").is_file()
    file_path = tmp_path / "file"
    file_path.write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        claim_output_dir(file_path, fp)
    write_json(tmp_path / "empty" / "unused.json", {})
    (tmp_path / "empty" / "unused.json").unlink()
    assert claim_output_dir(tmp_path / "empty", fp) is False  # an empty directory is fine


def test_under_ddp_only_the_main_process_claims_and_the_others_get_its_answer(tmp_path, monkeypatch):
    """Every rank calls train(); rank 0 alone applies the rules (and writes), the others take its answer, a
    refusal included. Claiming on every rank made rank 1 'resume' the run rank 0 had just started."""
    out, fp = tmp_path / "run", run_fingerprint(recipe(tmp_path / "run"), [])
    monkeypatch.setenv("WORLD_SIZE", "2")
    sent: list = []

    def as_rank(rank: int) -> bool:
        def broadcast(objects):  # rank 0 sends, the others receive what it sent
            if rank == 0:
                sent[:] = list(objects)
            else:
                objects[:] = sent
            return objects

        monkeypatch.setattr(accelerate, "PartialState", lambda **_: SimpleNamespace(is_main_process=rank == 0))
        monkeypatch.setattr(accelerate.utils, "broadcast_object_list", broadcast)
        return claim_on_main_process(out, fp, overwrite=False, resume=False)

    assert as_rank(0) is False and (out / "fingerprint.json").is_file()  # a new run
    assert as_rank(1) is False  # the same answer, not "resume the run rank 0 just started"
    write_json(out / "run_info.json", {})
    with pytest.raises(InputError, match="this run is finished") as on_main:
        as_rank(0)
    with pytest.raises(InputError, match="this run is finished") as on_other:
        as_rank(1)
    assert str(on_other.value) == str(on_main.value) and on_other.value.path == str(out)


def test_whole_run_loss_weights_each_logged_loss_by_its_steps():
    # logged at step 1 (first step), 5 and 10; resumed from checkpoint-10, the last session's mean loss is 0.5
    history = [{"loss": 4.0, "step": 1}, {"loss": 2.0, "step": 5}, {"eval_loss": 9.0, "step": 5},
               {"loss": 1.0, "step": 10}, {"loss": 0.6, "step": 15}, {"train_loss": 0.5, "step": 16}]
    assert whole_run_train_loss(history, 10) == pytest.approx(((4 * 1 + 2 * 4 + 1 * 5) + 0.5 * 6) / 16)
    # an interrupted history (no final train_loss): the logged losses alone
    assert whole_run_train_loss(history[:-1]) == pytest.approx((4 * 1 + 2 * 4 + 1 * 5 + 0.6 * 5) / 15)
    assert whole_run_train_loss([]) is None


def test_whole_run_loss_counts_the_steps_after_the_last_log():
    # 18 steps logged every 20: only step 1 was logged; the trainer's train_loss covers all 18
    history = [{"loss": 0.89, "step": 1}, {"train_loss": 0.67, "step": 18}]
    assert whole_run_train_loss(history) == pytest.approx(0.67)


def test_a_run_that_wrote_nothing_but_its_fingerprint_restarts_with_new_settings(tmp_path):
    out = tmp_path / "run"
    fp = run_fingerprint(recipe(out), [])
    assert claim_output_dir(out, fp) is False  # started, then failed before writing anything
    other = run_fingerprint(recipe(out, learning_rate=1e-3), [])
    assert claim_output_dir(out, other) is False  # nothing to resume: a fresh start, not a refusal
    assert json.loads((out / "fingerprint.json").read_text())["fingerprint"] == other["fingerprint"]
    (out / "checkpoint-2").mkdir()
    with pytest.raises(InputError, match="run of other settings"):  # progress is never thrown away silently
        claim_output_dir(out, fp)


def test_a_failed_new_run_is_released_unless_it_saved_progress(tmp_path):
    from ragtruth_spans.runs.run_dir import release_failed_run

    out = tmp_path / "run"
    claim_output_dir(out, run_fingerprint(recipe(out), []))
    (out / "base").mkdir()
    (out / "base" / "config.json").write_text("{}")
    assert release_failed_run(out) is True and list(out.iterdir()) == []
    claim_output_dir(out, run_fingerprint(recipe(out), []))
    (out / "checkpoint-3").mkdir()
    assert release_failed_run(out) is False and (out / "fingerprint.json").is_file()
