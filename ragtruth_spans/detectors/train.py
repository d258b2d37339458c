"""``ragtruth-spans train``: one entry for every detector family, dispatching on the recipe's ``kind`` (as
:mod:`ragtruth_spans.detectors.loader` does for loading)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ragtruth_spans.core.directories import check_output_dir
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.extras import require
from ragtruth_spans.detectors.family import Family, get_family
from ragtruth_spans.runs.run_dir import release_failed_run, run_fingerprint
from ragtruth_spans.training.data import SAMPLE, extra_files, split_file, synth_files, training_file
from ragtruth_spans.training.recipe import Recipe
from ragtruth_spans.training.run import TrainResult, claim_on_main_process

__all__ = ["TrainResult", "check_extra_sources", "train"]

TRAINER_KINDS = ("generative", "token-classification", "entailment")
"""The families that train with a transformers ``Trainer`` and accept ``callbacks``."""


def check_extra_sources(recipe: Recipe, family: Family) -> None:
    """Refuse ``data.extra`` for a family that does not train on extra sources, and a ``weight`` other than 1
    (of an extra source, or ``data.synth.weight``) for one that cannot weight records
    (:attr:`Family.extra_sources`), rather than ignore them."""
    synth = recipe.data.synth
    if synth is not None and synth.weight != 1.0 and family.extra_sources != "weighted":
        raise InputError(f"{recipe.kind} training cannot weight records: set data.synth.weight to 1 (got "
                         f"{synth.weight})", field="data.synth.weight")
    if not recipe.data.extra:
        return
    if family.extra_sources is None:
        raise InputError(f"{recipe.kind} recipes do not train on extra sources yet: remove data.extra (it names "
                         f"{len(recipe.data.extra)} source(s))", field="data.extra")
    if family.extra_sources == "unweighted":
        for k, source in enumerate(recipe.data.extra):
            if source.weight != 1.0:
                raise InputError(f"{recipe.kind} training cannot weight records: set the weight to 1 (got "
                                 f"{source.weight})", field=f"data.extra[{k}].weight")


def run_inputs(recipe: Recipe) -> list[tuple[str, str | Path]]:
    """What a run reads that its ``output_dir`` may not be or hold (``--overwrite`` deletes it whole):
    the prepared directory, every ``data.extra`` and ``data.synth.documents`` directory and a local base model
    folder."""
    inputs: list[tuple[str, str | Path]] = []
    if recipe.data.prepared_dir != SAMPLE:
        inputs.append(("data.prepared_dir", recipe.data.prepared_dir))
    inputs.extend((f"data.extra[{k}].dir", source.dir) for k, source in enumerate(recipe.data.extra))
    if recipe.data.synth is not None:
        inputs.extend((f"data.synth.documents[{k}]", d) for k, d in enumerate(recipe.data.synth.documents))
    inputs.extend(recipe.extra_inputs())
    model = getattr(getattr(recipe, "model", None), "name_or_path", None)
    if isinstance(model, str) and Path(model).expanduser().is_dir():
        inputs.append(("model.name_or_path", Path(model).expanduser()))
    return inputs


def fingerprinted_files(recipe: Recipe) -> list[Path | None]:
    """The data files whose contents the run's fingerprint holds: the training split (where the family reads one),
    the eval split, ``data.extra``'s and ``data.synth.documents``' files."""
    files = [training_file(recipe.data)] if recipe.reads_key("data.split") else []
    if recipe.data.eval_split is not None:
        files.append(split_file(recipe.data, recipe.data.eval_split))
    return [*files, *extra_files(recipe.data), *synth_files(recipe.data), *recipe.extra_data_files()]


def trainable_family(recipe: Recipe, callbacks: Sequence[Any] = ()) -> Family:
    """The family that trains ``recipe``, once every check that reads no data has passed: the family trains, the
    ``[train]`` extra is installed, ``data.extra`` suits the family (:func:`check_extra_sources`), ``output_dir``
    is no input of the run and can be written, and ``callbacks`` go only to a family with a ``Trainer``.

    >>> from ragtruth_spans.detectors.recipes import load_recipe
    >>> trainable_family(load_recipe("tiny-cpu", ["output_dir=runs/doc"]), callbacks=[object()]).kind
    'generative'
    """
    family = get_family(recipe.kind)
    if family.train is None:
        raise InputError(f"detectors of kind {recipe.kind!r} are not trained", field="kind")
    require("train", "training")
    check_extra_sources(recipe, family)
    check_output_dir(recipe.output_dir, field="output_dir", inputs=run_inputs(recipe), writes=None,
                     inside_inputs=True)
    if callbacks and recipe.kind not in TRAINER_KINDS:
        raise InputError(f"{recipe.kind} training takes no trainer callbacks", field="kind")
    return family


def train(recipe: Recipe, *, overwrite: bool = False, resume: bool = False,
          callbacks: Sequence[Any] = ()) -> TrainResult:
    """Train the detector that ``recipe`` describes (its family's train function) into ``recipe.output_dir``.

    ``output_dir`` is checked first, before any data is read: not an input of the run, not holding one
    (:func:`run_inputs`), in a writable folder. Then the run directory rules (:mod:`ragtruth_spans.runs.run_dir`)
    are applied: a new run starts, an unfinished run of the same fingerprint resumes, anything else is refused
    unless ``overwrite`` (start over) or ``resume`` (continue a run of other settings). The family's train
    function gets ``resume`` (continue from the last checkpoint of ``output_dir``) and the ``fingerprint`` to
    record in ``run_info.json``. A new run that fails before saving a checkpoint leaves nothing behind
    (:func:`release_failed_run`). The run directory is locked for the whole run (``OUTPUT_DIR.lock``): a second
    ``train`` into it is refused at once, naming this one
    (:func:`~ragtruth_spans.training.run.claim_on_main_process`).
    ``callbacks`` (``transformers.TrainerCallback`` objects) are handed to the families that train with a
    transformers ``Trainer`` (generative, token-classification); another family given some is an
    :class:`InputError`.
    Progress goes to the ``ragtruth_spans`` loggers (``INFO``); the run's one-line account is
    :attr:`TrainResult.summary`. Nothing of the host program is changed: its logging, its environment and the
    libraries' loggers are its own to set (the command line quietens them for itself).

    The recommended recipe without its sentence encoder trains in seconds; here on twenty invented responses
    (ten sources, each with a faithful answer and one whose year is wrong):

    >>> import json, pathlib, tempfile
    >>> from ragtruth_spans import load_detector, load_recipe, read_own_jsonl, train, write_prepared
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [{"context": f"The hotel in Town {i} opened in {1990 + i}.", "response": f"It opened in {year}.",
    ...           "spans": [] if year == 1990 + i else [{"start": 13, "end": 17}]}
    ...          for i in range(10) for year in (1990 + i, 1980 + i)]
    >>> _ = (folder / "mine.jsonl").write_text("".join(json.dumps(x) + "\\n" for x in lines), encoding="utf-8")
    >>> _ = write_prepared(folder / "data", *read_own_jsonl(folder / "mine.jsonl"))
    >>> recipe = load_recipe("recommended-cpu", [f"data.prepared_dir={folder / 'data'}", "features.encoder=null",
    ...                                          "data.synth=null", f"output_dir={folder / 'run'}"])
    >>> result = train(recipe)
    >>> result.output_dir == folder / "run", sorted(result.metrics)[:3]
    (True, ['eval', 'responses', 'span_f1'])
    >>> found = load_detector(folder / "run").detect(context="The hotel opened in 1999.",
    ...                                              response="It opened in 1989.", task="Summary")
    >>> [(s.start, s.end) for s in found.spans]
    [(13, 17)]
    """
    family = trainable_family(recipe, callbacks)
    fingerprint = run_fingerprint(recipe, fingerprinted_files(recipe))
    with ExitStack() as lock:  # the run directory's lock, held (main process) until the run ends
        resuming = claim_on_main_process(recipe.output_dir, fingerprint, overwrite=overwrite, resume=resume,
                                         lock=lock)
        try:
            observers = {"callbacks": list(callbacks)} if callbacks else {}
            return family.train(recipe, resume=resuming, fingerprint=fingerprint, **observers)
        except BaseException:
            if not resuming and int(os.environ.get("RANK", "0")) == 0:
                release_failed_run(recipe.output_dir)  # nothing saved: a retry (fixed data, other settings) starts
            raise
