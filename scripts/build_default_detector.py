"""Build the detector that ships inside the package (``ragtruth_spans/detectors/default/``) from RAGTruth files.

    python scripts/build_default_detector.py --data-dir ../shared/data            # the shipped build (~6-10 min)
    python scripts/build_default_detector.py --data-dir ../shared/data --out out/d --subset 36 \\
        --set features.encoder=null                                                # a small build (tests)
    python scripts/build_default_detector.py --data-dir ../shared/data --out out/default-minus-test \\
        --hold-out-test                                    # trained the same way, the pool's test part left out

The only way the shipped files are made. It reads ``DATA_DIR/ragtruth_pool`` and ``DATA_DIR/ragtruth_sample``
(RAGTruth's ``response.jsonl`` + ``source_info.jsonl``), trains the ``recommended-cpu`` recipe (``kind: stacked``,
docs/STACKED.md) on all of their responses and writes a finished run directory to ``--out`` plus ``build.json``.
The word model and the response head train on XSum's and ExpertQA's labelled training files in
``DATA_DIR/external`` too (``data.extra``, training-only), imported into the work folder with their importers'
defaults, ExpertQA's answers whose evidence is only links kept (:data:`EXTERNAL`, :data:`DEFAULT_OVERRIDES`;
``--set data.extra=[]`` builds without them). The recipe's generated data
(``data.synth``) comes from the RAGTruth contexts, as in the measured runs of docs/MODEL_CARD.md;
``--set data.synth.documents=[external/xsum, external/summedits, external/expertqa]`` adds those sets' contexts
(never their labels) — measured to rank the crafted suite worse (docs/lab/NOTEBOOK.md); ``--set data.synth=null``
builds without generated data.

**The split.** Training on everything leaves no held-out set, yet the recipe early-stops the combiner and tunes its
decision on an eval split. That eval split is the pool's documented source-disjoint dev split (``prepare
--split-by-source train=0.7,dev=0.1,test=0.2 --seed 0``: 155 responses of 26 sources); everything else (the pool's
train and test parts and the whole sample: 1,471 responses) is training data. The decision is tuned on the
out-of-fold training probabilities plus that dev split, as for any stacked run. So the shipped detector has no
figure of its own: docs/MODEL_CARD.md gives the figures of a run trained the same way without the measured split
(``--hold-out-test``: the pool's test part, 298 responses of 50 sources, is left out of training; measure that run
on it with ``prepare --split-by-source train=0.7,dev=0.1,test=0.2 --seed 0`` of the pool, its ``test.jsonl``).

**Reproducible.** Seeds are fixed by the recipe (data, augmentation, folds, LightGBM), LightGBM runs with
``deterministic: true``, ``force_row_wise`` and one thread, torch with ``--threads`` threads. The work happens in a
temporary folder with relative paths, so no path of this machine lands in the files; ``run_info.json``'s
``created`` is null and its ``seconds`` and ``peak_rss_mb`` are left out (the wall time is printed, not stored),
so two builds from the same data with the same libraries give byte-identical files. ``build.json`` records the
recipe's fingerprint, the SHA-256 of each input file, the library versions and the command (its data folder
relative to the current one). ``--out`` is replaced atomically at the end.

Exit status 2 with a one-line error for a missing or malformed input.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import random
import shutil
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

RECIPE = "recommended-cpu"
POOL, SAMPLE = "ragtruth_pool", "ragtruth_sample"
RAW_FILES = ("response.jsonl", "source_info.jsonl")
POOL_SPLIT = {"train": 0.7, "dev": 0.1, "test": 0.2}
"""The pool's documented source-disjoint split (docs/BENCHMARKS.md); its ``dev`` part is the eval split here."""
SPLIT_SEED = 0
MACHINE_KEYS = ("seconds", "peak_rss_mb")
"""What ``run_info.json`` records of the machine, left out of the shipped files (they would differ per build)."""
WORK_DATA, WORK_RUN = "data", "default"
"""Relative names, inside the temporary work folder, of the prepared data and of the run (what recipe.yaml says)."""
LIBRARIES = ("lightgbm", "numpy", "scikit-learn", "sentence-transformers", "torch", "transformers", "ragtruth-spans")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    from ragtruth_spans.detectors.shipped import DEFAULT_DIR

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"),
                        help=f"Folder holding {POOL}/ and {SAMPLE}/ (RAGTruth's file format).")
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR, help="The run directory to (re)write "
                        "(default: the package's ragtruth_spans/detectors/default).")
    parser.add_argument("--subset", type=int, default=None, help="Train on whole sources until at least this "
                        "many training responses (and about a quarter as many eval responses): tests.")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="A recipe override (repeatable), e.g. features.encoder=null.")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the sentence encoder).")
    parser.add_argument("--hold-out-test", action="store_true", help="Leave the pool's test part out of training "
                        "(a run to measure the shipped recipe on it; needs an --out of its own).")
    args = parser.parse_args(argv)
    if args.subset is not None and args.subset < 1:
        parser.error("--subset must be >= 1")
    if args.hold_out_test and args.out.resolve() == DEFAULT_DIR:
        parser.error("--hold-out-test builds a run for measuring, never the shipped detector: give --out")
    return args


def input_files(data_dir: Path) -> dict[str, Path]:
    """``{"ragtruth_pool/response.jsonl": path, ...}``: the four input files (a missing one is an InputError)."""
    from ragtruth_spans.core.errors import InputError

    files = {f"{folder}/{name}": data_dir / folder / name for folder in (POOL, SAMPLE) for name in RAW_FILES}
    for path in files.values():
        if not path.is_file():
            raise InputError(f"missing: the build reads {POOL}/ and {SAMPLE}/ (RAGTruth's response.jsonl and "
                             "source_info.jsonl) under --data-dir", path=path)
    return files


def read_splits(data_dir: Path, work: Path, hold_out_test: bool = False
                ) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """``(train records, eval records, prepare counts)``: the pool re-split by source (its dev part: eval; its
    train and test parts: training, the test part left out with ``hold_out_test``) and the whole sample
    (training), each through ``prepare``."""
    from ragtruth_spans.core.jsonl import read_records
    from ragtruth_spans.data.prepare import prepare

    with warnings.catch_warnings():  # the sample's empty dev/test splits are expected: counted below instead
        warnings.simplefilter("ignore", UserWarning)
        pool = prepare(data_dir / POOL, work / "pool", split_by_source=POOL_SPLIT, seed=SPLIT_SEED)
        sample = prepare(data_dir / SAMPLE, work / "sample", split_by_source={"train": 1.0}, seed=SPLIT_SEED)
    held = [] if hold_out_test else read_records(work / "pool" / "test.jsonl")
    train = [*read_records(work / "pool" / "train.jsonl"), *held, *read_records(work / "sample" / "train.jsonl")]
    evaluation = read_records(work / "pool" / "dev.jsonl")
    counts = {name: {"responses_input": s.input_responses, "responses_filtered": sum(s.filtered.values()),
                     "labels": {k: v for k, v in s.labels.items() if isinstance(v, int)}}
              for name, s in ((POOL, pool), (SAMPLE, sample))}
    return train, evaluation, counts


def whole_sources(records: Sequence[Any], at_least: int, seed: int) -> list[Any]:
    """The records of seeded whole sources, tasks taken in turn, until at least ``at_least`` responses."""
    from ragtruth_spans.core.types import TASK_TYPES

    rng = random.Random(seed)
    queues = []
    for task in TASK_TYPES:
        ids = sorted({r.source_id for r in records if r.task_type == task})
        rng.shuffle(ids)
        queues.append(ids)
    chosen: set[str] = set()
    count = Counter(r.source_id for r in records)
    total = 0
    while total < at_least and any(queues):
        for queue in queues:
            if queue and total < at_least:
                source = queue.pop(0)
                chosen.add(source)
                total += count[source]
    return [r for r in records if r.source_id in chosen]


def describe(records: Sequence[Any]) -> dict[str, Any]:
    """Counts of a split: responses, sources, hallucinated responses, spans, by task and by generating model."""
    def counts(subset: Sequence[Any]) -> dict[str, int]:
        return {"responses": len(subset), "hallucinated": sum(bool(r.spans) for r in subset),
                "spans": sum(len(r.spans) for r in subset)}

    return {**counts(records), "sources": len({r.source_id for r in records}),
            "by_task": {t: counts([r for r in records if r.task_type == t])
                        for t in sorted({r.task_type for r in records})},
            "by_model": {m: counts([r for r in records if r.model == m])
                         for m in sorted({str(r.model) for r in records})}}


EXTERNAL = {"xsum": ("xsum-hallucinations", "xsum_hallucinations", ()),
            "summedits": ("summedits", "summedits", ()),
            "expertqa": ("expertqa", "expertqa", ("--keep-link-only",)),
            "begin": ("begin", "begin", ())}
"""The public sets of ``DATA_DIR/external`` that a build can read: ``external/<name>`` in the work folder, imported
with each importer's defaults and the flags given here when the recipe's ``data.extra`` or ``data.synth.documents``
names them. ExpertQA keeps its answers whose evidence is only links: trained without them, ``recommended-cpu``
ranked RAGTruth dev and SummEdits worse and flagged 60 % of the crafted faithful answers at its gate instead of 36 %
(docs/lab/NOTEBOOK.md). BEGIN's response-level labels are read only when an override names ``external/begin``."""


SYNTH_DOCUMENTS = "data.synth.documents=[external/xsum, external/summedits, external/expertqa]"
EXTRA_SOURCES = "data.extra=[{dir: external/xsum, weight: 0.3}, {dir: external/expertqa, weight: 0.5}]"
INT8_FEATURES = "features.precision=int8"
DEFAULT_OVERRIDES = (EXTRA_SOURCES, INT8_FEATURES)
"""The overrides every build starts with (a ``--set`` given to the script comes after them and may replace them):
XSum's and ExpertQA's labelled training files as extra training-only data of the word model and the response head
(the recipe's ``response.extra``; docs/lab/NOTEBOOK.md), and the sentence encoder's features from its int8 ONNX
export (``features.precision=int8``: the detector then runs on ``onnx-int8``; its span F1 on pool dev and on the
public test splits stays within the fp32 build's 95 % interval and the crafted suite's rates are unchanged,
docs/BENCHMARKS.md; ``--set features.precision=fp32`` builds on fp32 features). ``--set features.encoder_layers=4``
builds on the encoder's first four layers: faster, measured to rank summaries worse, so not shipped
(docs/lab/NOTEBOOK.md). SummEdits' labels are never read.
:data:`SYNTH_DOCUMENTS` is not among them: generated data comes from RAGTruth's contexts only."""


def import_documents(data_dir: Path, work: Path, overrides: Sequence[str]) -> dict[str, Path]:
    """Import each set of :data:`EXTERNAL` that the recipe's ``data.synth.documents`` or ``data.extra`` names
    (``external/<name>``, relative to the work folder) from ``DATA_DIR/external``; returns their input files for
    build.json's hashes (a missing folder is an InputError)."""
    import subprocess

    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.detectors.recipes import load_recipe

    data = load_recipe(RECIPE, list(overrides)).data
    named = {d.removeprefix("external/") for d in [*(data.synth.documents if data.synth else []),
                                                    *(source.dir for source in data.extra)]}
    inputs: dict[str, Path] = {}
    for name, (command, folder, flags) in EXTERNAL.items():
        if name not in named:
            continue
        source = data_dir / "external" / folder
        if not source.is_dir():
            raise InputError(f"missing: the recipe reads {folder} under --data-dir/external", path=source)
        subprocess.run([sys.executable, "-m", "ragtruth_spans", "--quiet", "import", command, "--in", str(source),
                        "--out", str(work / "external" / name), *flags], check=True)
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            inputs[f"external/{folder}/{path.relative_to(source)}"] = path
    return inputs


def library_versions() -> dict[str, str]:
    """Python's version, then those of :data:`LIBRARIES` (what build.json records)."""
    from ragtruth_spans.runs.run_dir import library_versions as installed

    return {"python": platform.python_version(), **installed(LIBRARIES)}


@contextlib.contextmanager
def working_directory(path: Path) -> Iterator[None]:
    """Run inside ``path`` (the run's files then hold relative paths only)."""
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def train_run(work: Path, overrides: Sequence[str]) -> dict[str, Any]:
    """Train the recipe on ``work/data`` into ``work/default``; returns its run_info."""
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train
    from ragtruth_spans.runs.run_info import read_run_info

    settings = [f"data.prepared_dir={WORK_DATA}", "data.split=train", "data.eval_split=dev",
                f"output_dir={WORK_RUN}", *overrides]
    with working_directory(work):
        print(f"trained: {train(load_recipe(RECIPE, settings)).summary}", file=sys.stderr)
    return read_run_info(work / WORK_RUN)


def seal(run_dir: Path, info: dict[str, Any], build: dict[str, Any]) -> dict[str, Any]:
    """Make the run reproducible byte for byte (``created`` null, no ``seconds``, ``fingerprint.json`` without its
    start time), write ``build.json`` and seal the manifest and fingerprint again (it covers build.json)."""
    from ragtruth_spans.core.jsonl import read_json_file, write_json
    from ragtruth_spans.detectors.shipped import BUILD_FILE
    from ragtruth_spans.runs.manifest import verify_run
    from ragtruth_spans.runs.run_dir import seal_run_info
    from ragtruth_spans.runs.run_info import FINGERPRINT_FILE

    started = read_json_file(run_dir / FINGERPRINT_FILE)
    started["started"] = None
    write_json(run_dir / FINGERPRINT_FILE, started)
    write_json(run_dir / BUILD_FILE, build)
    sealed = seal_run_info(run_dir, {**{k: v for k, v in info.items() if k not in MACHINE_KEYS}, "created": None})
    verify_run(run_dir)
    return sealed


def replace_dir(source: Path, target: Path) -> None:
    """Put ``source``'s files at ``target`` atomically: a sibling copy renamed into place, the old one removed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    shutil.rmtree(staged)
    shutil.copytree(source, staged)
    old = target.with_name(f".{target.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        target.rename(old)
    staged.rename(target)
    if old.exists():
        shutil.rmtree(old)


def command(args: argparse.Namespace) -> list[str]:
    """The command recorded in build.json: the options that decide the files (not ``--out``); the data folder
    relative to the current one, so that no absolute path of the building machine lands in the files."""
    try:
        data_dir = os.path.relpath(args.data_dir)
    except ValueError:  # another drive (Windows): no relative form
        data_dir = str(args.data_dir)
    words = ["python", "scripts/build_default_detector.py", "--data-dir", data_dir]
    if args.subset is not None:
        words += ["--subset", str(args.subset)]
    if args.hold_out_test:
        words.append("--hold-out-test")
    for item in args.overrides:
        words += ["--set", item]
    return [*words, "--threads", str(args.threads)]


def build(args: argparse.Namespace) -> dict[str, Any]:
    """Prepare, train, seal and publish; returns build.json's content."""
    from ragtruth_spans.core.jsonl import file_sha256, write_records

    files = input_files(args.data_dir)
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="build-default-detector-") as tmp:
        work = Path(tmp)
        train, evaluation, prepared = read_splits(args.data_dir, work / "prepared", args.hold_out_test)
        if args.subset is not None:
            train = whole_sources(train, args.subset, SPLIT_SEED)
            evaluation = whole_sources(evaluation, max(args.subset // 4, 1), SPLIT_SEED)
        write_records(work / WORK_DATA / "train.jsonl", train)
        write_records(work / WORK_DATA / "dev.jsonl", evaluation)
        print(f"training on {len(train)} responses, early stopping and tuning on {len(evaluation)}", flush=True)
        overrides = [*DEFAULT_OVERRIDES, *args.overrides]
        files.update(import_documents(args.data_dir, work, overrides))
        info = train_run(work, overrides)
        payload = {
            "recipe": RECIPE, "overrides": overrides,
            "training_fingerprint": info["training_fingerprint"],
            "inputs_sha256": {name: file_sha256(path) for name, path in files.items()},
            "split": {"train": f"{POOL} train{'' if args.hold_out_test else '+test'} parts and all of {SAMPLE}",
                      "eval": f"{POOL} dev part", **({"held_out": f"{POOL} test part"} if args.hold_out_test else {}),
                      "pool_split_by_source": POOL_SPLIT, "seed": SPLIT_SEED, "subset": args.subset},
            "data": {"train": describe(train), "eval": describe(evaluation), "prepare": prepared},
            "libraries": library_versions(), "torch_threads": args.threads, "command": command(args),
        }
        seal(work / WORK_RUN, info, payload)
        replace_dir(work / WORK_RUN, args.out)
    return payload


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.core.logs import configure

    configure("normal")  # the entry point's one set-up of logging: training progress on stderr, libraries quiet

    args.data_dir = Path(args.data_dir)
    started = time.perf_counter()
    try:
        payload = build(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sizes = ", ".join(f"{p.name} {p.stat().st_size / 1e3:.0f} kB" for p in sorted(args.out.iterdir()) if p.is_file())
    print(f"built {args.out} in {time.perf_counter() - started:.0f} s from {payload['data']['train']['responses']} "
          f"training + {payload['data']['eval']['responses']} eval responses ({sizes})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
