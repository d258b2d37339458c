"""What the causal-LM support columns (``features.lm``, docs/STACKED.md) add over the stacked detector's support
features, and what they cost.

Scores the dev split and the training responses of randomly drawn sources (seeded; any prefix is a source-disjoint
sample) with the LM — cached per record, so a killed run goes on where it stopped and a larger ``--train-responses``
reuses what is scored — then compares, on those real responses only, a k-fold source-grouped cross-validation of
the combiner (early stopping on another fold, never the held one) with the encoder-free base columns alone and with
the LM columns added; the decision is tuned on the out-of-fold probabilities by the project's tuner. Prints the
per-column AUROC and the comparison; ``--out`` writes them as JSON.

    python lab/probes/bench_lm_gain.py --prepared pool --train-responses 156            # BENCHMARKS.md's table
    python lab/probes/bench_lm_gain.py --prepared pool --model ./my-llama --max-context-tokens 512
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from ragtruth_spans.core.files import atomic_write_text
from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.detectors.recipes import load_recipe
from ragtruth_spans.detectors.stacked import combiner
from ragtruth_spans.detectors.stacked.columns import ColumnBuilder
from ragtruth_spans.detectors.stacked.features import BASE_FEATURES
from ragtruth_spans.detectors.stacked.lm_gain import LM_FEATURES, LMScorer, lm_columns
from ragtruth_spans.detectors.stacked.train import word_labels


def sample(prepared: Path, train_responses: int, seed: int) -> list:
    """The dev split, then ``train_responses`` training responses in a seeded order of their sources."""
    train = read_records(prepared / "train.jsonl")
    sources = sorted({r.source_id for r in train})
    random.Random(seed).shuffle(sources)
    rank = {s: i for i, s in enumerate(sources)}
    train = sorted(train, key=lambda r: (rank[r.source_id], r.id))[:train_responses]
    return read_records(prepared / "dev.jsonl") + train


def cross_validated(records: list, columns: list, x: np.ndarray, y: np.ndarray, names: list[str], folds: int,
                    recipe) -> dict:
    """Out-of-fold word probabilities → word AUROC, the tuned decision's span F1 (overall, by task) and the
    response AUROC of the top word probability."""
    fold_of = combiner.source_folds([r.source_id for r in records], folds, 0)
    word_fold = np.concatenate([[f] * len(c.words) for f, c in zip(fold_of, columns)])
    oof = np.zeros(len(y))
    for k in range(folds):
        held, stop = word_fold == k, word_fold == (k + 1) % folds
        fit = ~held & ~stop
        booster = combiner.fit(x[fit], y[fit], x[stop], y[stop], recipe.combiner, names)
        oof[held] = booster.predict(x[held])
    bounds = np.cumsum([0] + [len(c.words) for c in columns])
    probabilities = [oof[bounds[i]:bounds[i + 1]] for i in range(len(records))]
    words = [c.words for c in columns]
    decision, table = combiner.tune(records, words, probabilities, recipe.decision)
    inputs = combiner.TuningInputs(records, words, probabilities)
    by_task = {task: round(inputs.figures([i for i, r in enumerate(records) if r.task_type == task],
                                          decision)["span"]["f1"], 3)
               for task in ("QA", "Summary", "Data2txt") if any(r.task_type == task for r in records)}
    labels = [bool(r.spans) for r in records]
    top = [float(p.max()) if len(p) else 0.0 for p in probabilities]
    return {"word_auroc": round(roc_auc_score(y, oof), 3), "span_f1": round(max(r["span_f1"] for r in table), 3),
            "span_f1_by_task": by_task,
            "response_auroc": round(roc_auc_score(labels, top), 3) if len(set(labels)) == 2 else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepared", type=Path, required=True, help="A prepared directory (train/dev.jsonl).")
    parser.add_argument("--train-responses", type=int, default=156)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--max-context-tokens", type=int, default=768)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.folds < 3:
        parser.error("--folds must be at least 3 (one held out, one for early stopping, the others to fit)")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    recipe = load_recipe("recommended-cpu", [f"data.prepared_dir={args.prepared}", "features.encoder=null"])
    scorer = LMScorer(args.model, max_context_tokens=args.max_context_tokens)
    records = sample(args.prepared, args.train_responses, args.seed)
    items = [DetectItem.of(r) for r in records]
    started = time.perf_counter()
    lm = []
    for n, item in enumerate(items, 1):
        lm.append(scorer.score(item))
        if n % 25 == 0 or n == len(items):
            print(f"LM passes: {n}/{len(items)} responses ({time.perf_counter() - started:.0f} s)", flush=True)
    seconds = time.perf_counter() - started
    base = ColumnBuilder().build(items)
    y = np.concatenate([word_labels(r, c.words) for r, c in zip(records, base)])
    x_base = np.concatenate([c.matrix for c in base])
    x_lm = np.concatenate([lm_columns(c.words, s) for c, s in zip(base, lm)])
    alone = {}
    for j, name in enumerate(LM_FEATURES):
        ok = ~np.isnan(x_lm[:, j])
        alone[name] = round(roc_auc_score(y[ok], -x_lm[ok, j]), 3) if len(set(y[ok])) == 2 else None
    result = {"responses": len(records), "sources": len({r.source_id for r in records}), "words": len(y),
              "hallucinated_words": int(y.sum()), "lm_seconds": round(seconds, 1), "model": args.model,
              "max_context_tokens": args.max_context_tokens, "auroc_alone": alone,
              "base": cross_validated(records, base, x_base, y, list(BASE_FEATURES), args.folds, recipe),
              "base+lm": cross_validated(records, base, np.concatenate([x_base, x_lm], axis=1), y,
                                         [*BASE_FEATURES, *LM_FEATURES], args.folds, recipe)}
    print(f"{result['responses']} responses of {result['sources']} sources, {result['words']} words "
          f"({result['hallucinated_words']} hallucinated); LM passes {seconds:.0f} s (cached ones are free)")
    print("AUROC alone (lower value = hallucinated): " + ", ".join(f"{k} {v}" for k, v in alone.items()))
    for name in ("base", "base+lm"):
        r = result[name]
        print(f"{name:8s} word AUROC {r['word_auroc']}  span F1 {r['span_f1']}  by task {r['span_f1_by_task']}  "
              f"response AUROC {r['response_auroc']}")
    if args.out:
        atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
