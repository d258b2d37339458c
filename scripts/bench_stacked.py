"""Ablation of the stacked detector (recipes/recommended-cpu.yaml) on a prepared split: one `train` → `predict` →
`evaluate --bootstrap 1000` per variant, then a Markdown table. The choice column is the figure the variants are
chosen by (span F1 of the tuned decision on out-of-fold training + dev probabilities, from run_info.json); the test
columns are the measured split, reported, never chosen on.

    python scripts/bench_stacked.py --prepared pool --out bench-stacked                 # every variant
    python scripts/bench_stacked.py --prepared pool --out bench-stacked --only features,cosine

Each variant's run directory, predictions, report and /usr/bin/time-free wall clock go under --out; a variant whose
report exists is not run again (delete its folder to re-run it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

NO_ENCODER, NO_AUGMENT = "features.encoder=null", "data.augment=null"
LEAVES = {n: [f"combiner.num_leaves={n}", f"combiner.min_data_in_leaf={m}"]
          for n, m in ((7, 200), (15, 100), (31, 50), (63, 20))}
VARIANTS: dict[str, list[str]] = {
    "features": [NO_ENCODER, NO_AUGMENT, *LEAVES[31]],
    "features+cosine": [NO_AUGMENT, *LEAVES[31]],
    "features+augment": [NO_ENCODER, "data.augment={}", *LEAVES[31]],
    "features (7 leaves)": [NO_ENCODER, NO_AUGMENT, *LEAVES[7]],
    "features (15 leaves)": [NO_ENCODER, NO_AUGMENT, *LEAVES[15]],
    "features (63 leaves)": [NO_ENCODER, NO_AUGMENT, *LEAVES[63]],
    "features (15 leaves)+augment": [NO_ENCODER, "data.augment={}", *LEAVES[15]],
    "features (15 leaves)+augment x3": [NO_ENCODER, "data.augment={rounds: 3}", *LEAVES[15]],
    "features (15 leaves)+cosine+augment": ["data.augment={}", *LEAVES[15]],
    "features (7 leaves)+augment": [NO_ENCODER, "data.augment={}", *LEAVES[7]],
    "features (7 leaves)+cosine+augment": ["data.augment={}", *LEAVES[7]],
    "recommended-cpu (as shipped: the above + response gate)": [],
    "recommended-cpu without the encoder": [NO_ENCODER],
}
"""Every variant names all the settings it changes, so its figures do not depend on the shipped defaults."""


def run(cmd: list[str], log: Path) -> float:
    started = time.perf_counter()
    with log.open("w") as fh:
        code = subprocess.call(cmd, stdout=fh, stderr=subprocess.STDOUT)
    if code:
        sys.exit(f"failed ({code}): {' '.join(cmd)} — see {log}")
    return time.perf_counter() - started


def variant(name: str, overrides: list[str], prepared: Path, out: Path) -> dict:
    home = out / "".join(c if c.isalnum() else "-" for c in name)
    report_file = home / "test.report.json"
    if not report_file.is_file():
        home.mkdir(parents=True, exist_ok=True)
        cli = [sys.executable, "-m", "ragtruth_spans"]
        train = run([*cli, "train", "recommended-cpu", "--overwrite", "--set", f"data.prepared_dir={prepared}",
                     "--set", f"output_dir={home / 'run'}", *(a for o in overrides for a in ("--set", o))],
                    home / "train.log")
        pred = home / "test.jsonl"
        for stale in (pred, pred.with_name(pred.name + ".meta.json")):
            stale.unlink(missing_ok=True)
        predict = run([*cli, "predict", "--model", str(home / "run"), "--data", str(prepared / "test.jsonl"),
                       "--out", str(pred)], home / "predict.log")
        run([*cli, "evaluate", "--gold", str(prepared / "test.jsonl"), "--pred", str(pred), "--bootstrap", "1000",
             "--json", str(report_file)], home / "evaluate.log")
        (home / "seconds.json").write_text(json.dumps({"train": train, "predict": predict}))
    report = json.loads(report_file.read_text())
    info = json.loads((home / "run" / "run_info.json").read_text())
    seconds = json.loads((home / "seconds.json").read_text())
    return {"name": name, "report": report, "info": info, "seconds": seconds}


def row(result: dict, responses: int) -> str:
    o, ci, info = result["report"]["overall"], result["report"]["ci"]["overall"], result["info"]
    low, high = ci["span"]["f1"]
    task = {t: g["span"]["f1"] for t, g in result["report"]["by_task"].items()}
    return (f"| {result['name']} | {info['tuning']['span_f1']:.3f} | {o['span']['precision']:.3f} | "
            f"{o['span']['recall']:.3f} | {o['span']['f1']:.3f} [{low:.3f}, {high:.3f}] | {o['response']['f1']:.3f} | "
            f"{o['auroc']:.3f} | {task['QA']:.3f} | {task['Summary']:.3f} | {task['Data2txt']:.3f} | "
            f"{result['seconds']['train'] / 60:.1f} | {responses / result['seconds']['predict']:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prepared", type=Path, required=True, help="prepare output with train/dev/test.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default=None, help="comma-separated variant names (default: all)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(VARIANTS)
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        sys.exit(f"unknown variant(s) {unknown}; known: {list(VARIANTS)}")
    responses = sum(1 for _ in (args.prepared / "test.jsonl").open())
    print("| variant | choice: tuned span F1 (OOF train + dev) | span P | span R | span F1 [95% CI] | response F1 | "
          "AUROC | span F1 QA | Summary | Data2txt | train min | responses/s (predict, incl. load) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        print(row(variant(name, VARIANTS[name], args.prepared, args.out), responses), flush=True)


if __name__ == "__main__":
    main()
