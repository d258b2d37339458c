"""Transfer benchmark: one or more detectors measured on data sets from elsewhere and on generated held-out cases.

Usage::

    python scripts/bench_transfer.py --model runs/recommended-cpu --model numbers --model flag-all \\
        --set pool-dev=pool/dev.jsonl --set xsum=xsum/test.jsonl --set summedits=summedits/test.jsonl \\
        --set expertqa=expertqa/test.jsonl --generated 400 --generated-from pool/test.jsonl \\
        --generated-from xsum/test.jsonl --generated-seed 101 --max-per-set 300 --out bench-transfer

- ``--set NAME=FILE``: a prepared split file (``prepare`` / ``import`` output) measured as it is: span P/R/F1,
  response F1, AUROC (the project's evaluator), with 95 % percentile intervals from ``--bootstrap`` resamples of
  the set's responses (default 1,000; the tables print AUROC's: on a set of 50 answers it spans ~0.3).
  ``--max-per-set N`` keeps a seeded sample of N responses.
- ``--generated N``: N records generated (:mod:`ragtruth_spans.data.synth`) from the **contexts** of the
  ``--generated-from`` files with ``--generated-seed``: held out from training by seed and by context source when
  those files are test splits the detectors never trained on. Written to ``<out>/generated.jsonl``. Besides the
  set's figures: per kind, the **caught** rate (an edited case whose gold span overlaps a predicted span) and the
  **false-alarm** rate (a faithful case with any span), per faithful transform too.
- Every detector is a run directory or a detector name (``ragtruth_spans.load_detector``); ``--option
  KEY=VALUE`` applies to every run directory (e.g. ``threshold=0.3``).

Writes ``<out>/transfer.json`` (every figure, the files' SHA-256) and prints Markdown tables. Chosen on nothing:
a measurement script.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_records, write_records
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.evaluation.evaluator import evaluate


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_set(spec: str, max_per_set: int | None, seed: int) -> tuple[str, list[Record], str]:
    name, _, file = spec.partition("=")
    if not name or not file:
        raise InputError(f"--set needs NAME=FILE, got {spec!r}", field="--set")
    records = read_records(Path(file))
    if max_per_set is not None and len(records) > max_per_set:
        records = random.Random(seed).sample(records, max_per_set)
    return name, records, sha256(Path(file))


def generated_set(files: list[str], n: int, seed: int, out: Path) -> list[Record]:
    from ragtruth_spans.data import synth

    docs: list[Any] = []
    for file in files:
        docs += synth.documents(read_records(Path(file)), Path(file).parent.name)
    records, _ = synth.generate(docs, n, seed=seed)
    records = [Record(r.id.replace("#aug-", "#gen-"), r.source_id, r.task_type, r.model, "test", r.quality,
                      r.response, r.context, r.question, r.spans) for r in records]
    write_records(out / "generated.jsonl", records)
    return records


GENERATED_ID = re.compile(r"#gen-syn-\d+-\d+-(?P<kind>[a-z-]+)(?:~(?P<faithful>[a-z+-]+))?$")


def kind_of(record: Record) -> str:
    """The edit kind of a generated record (``faithful`` ones: ``faithful:<transforms>``), ``?`` for others."""
    m = GENERATED_ID.search(record.id)
    if m is None:
        return "?"
    return m["kind"] if m["kind"] != "faithful" else f"faithful:{m['faithful'] or 'copy'}"


def overlaps(record: Record, spans: list[Any]) -> bool:
    return any(p.start < g.end and g.start < p.end for g in record.spans for p in spans)


def kind_table(records: list[Record], detections: list[Any]) -> dict[str, dict[str, float]]:
    """Per generated kind: cases, caught (edited) or flagged (faithful) share."""
    hits: Counter = Counter()
    totals: Counter = Counter()
    for record, detection in zip(records, detections):
        kind = kind_of(record)
        totals[kind] += 1
        hits[kind] += overlaps(record, detection.spans) if record.spans else bool(detection.spans)
    return {k: {"cases": totals[k], "rate": round(hits[k] / totals[k], 3)} for k in sorted(totals)}


def measure(detector: Any, records: list[Record], bootstrap: int = 0, seed: int = 0
            ) -> tuple[dict[str, Any], list[Any], float]:
    started = time.perf_counter()
    detections = detector.detect_batch([DetectItem.of(r) for r in records])
    seconds = time.perf_counter() - started
    predictions = {r.id: d.spans for r, d in zip(records, detections)}
    scores = {r.id: d.score for r, d in zip(records, detections) if d.score is not None}
    report = evaluate(records, predictions, response_scores=scores or None, bootstrap=bootstrap, seed=seed).to_dict()
    ci = (report.get("ci") or {}).get("overall", {})
    figures = {"responses": len(records), "span": report["overall"]["span"],
               "response": report["overall"]["response"], "auroc": report["auroc"],
               "ci": {"span_f1": (ci.get("span") or {}).get("f1"), "response_f1": (ci.get("response") or {}).get("f1"),
                      "auroc": ci.get("auroc")},
               "errors": sum(1 for d in detections if d.error), "responses_per_s": round(len(records) / seconds, 2),
               "by_task": {t: round(g["span"]["f1"], 3) for t, g in report["by_task"].items()}}
    return figures, detections, seconds


def fmt_auroc(value: float | None) -> str:
    """AUROC to three decimals, ``–`` where it is undefined (one class only)."""
    return "–" if value is None else f"{value:.3f}"


def markdown(results: dict[str, Any], sets: list[str]) -> str:
    head = "| detector | " + " | ".join(f"{s} span F1 / resp. F1 / AUROC" for s in sets) + " |"
    lines = [head, "|---|" + "---:|" * len(sets)]
    for name, per_set in results.items():
        cells = []
        for s in sets:
            f = per_set[s]
            auroc = fmt_auroc(f["auroc"])
            interval = (f.get("ci") or {}).get("auroc")
            auroc += "" if interval is None else f" [{interval[0]:.2f}, {interval[1]:.2f}]"
            cells.append(f"{f['span']['f1']:.3f} / {f['response']['f1']:.3f} / {auroc}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def kinds_markdown(results: dict[str, Any]) -> str:
    names = list(results)
    kinds = sorted({k for r in results.values() for k in r.get("generated", {}).get("kinds", {})})
    lines = ["| kind (caught; faithful: flagged) | cases | " + " | ".join(names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    for kind in kinds:
        rows = [results[n]["generated"]["kinds"].get(kind, {}) for n in names]
        cases = next((r["cases"] for r in rows if r), 0)
        lines.append(f"| {kind} | {cases} | " + " | ".join(f"{r.get('rate', 0):.2f}" for r in rows) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", required=True, help="Run directory or detector name.")
    parser.add_argument("--option", action="append", default=[], help="KEY=VALUE load option for run dirs.")
    parser.add_argument("--set", action="append", default=[], dest="sets", help="NAME=FILE (prepared split).")
    parser.add_argument("--generated", type=int, default=0)
    parser.add_argument("--generated-from", action="append", default=[])
    parser.add_argument("--generated-seed", type=int, default=101)
    parser.add_argument("--max-per-set", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0, help="Seed of --max-per-set's samples and the bootstrap.")
    parser.add_argument("--bootstrap", type=int, default=1000,
                        help="Resamples of each set's responses for the 95 %% intervals (0: none).")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from ragtruth_spans.core.logs import configure

    configure("normal")  # the script's one set-up of logging: progress on stderr, the libraries quiet
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        data = {name: (records, digest) for name, records, digest in
                (load_set(s, args.max_per_set, args.seed) for s in args.sets)}
        if args.generated:
            records = generated_set(args.generated_from, args.generated, args.generated_seed, args.out)
            data["generated"] = (records, sha256(args.out / "generated.jsonl"))
        options = dict(o.split("=", 1) for o in args.option)
        options = {k: json.loads(v) if v[:1].isdigit() else v for k, v in options.items()}
        results: dict[str, Any] = {}
        for model in args.model:
            detector = load_detector(model, **(options if Path(model).is_dir() else {}))
            per_set: dict[str, Any] = {}
            for name, (records, _) in data.items():
                figures, detections, seconds = measure(detector, records, args.bootstrap, args.seed)
                if name == "generated":
                    figures["kinds"] = kind_table(records, detections)
                per_set[name] = figures
                print(f"{model} on {name}: span F1 {figures['span']['f1']:.3f}, response F1 "
                      f"{figures['response']['f1']:.3f}, AUROC {fmt_auroc(figures['auroc'])} ({seconds:.0f} s)",
                      file=sys.stderr)
            results[model] = per_set
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sets = list(data)
    summary = {"results": results, "files": {n: d for n, (_, d) in data.items()},
               "args": vars(args) | {"out": str(args.out)}}
    (args.out / "transfer.json").write_text(json.dumps(summary, indent=1, default=str))
    print(markdown(results, sets))
    if "generated" in data:
        print()
        print(kinds_markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
