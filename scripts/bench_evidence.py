"""Measure the per-span evidence step (docs/EVIDENCE.md) on a prepared split.

1. Verdict against the gold type: for every gold span with a RAGTruth type, the evidence of the span (as if a
   detector had flagged exactly it) and whether its verdict matches the type's family (Conflict → contradicted,
   Baseless → unsupported); by family and task, with the share of ``uncertain``.
2. Throughput: responses/s of a detector alone, and of the same detector followed by the evidence step, over the
   split's responses (the evidence of the detector's own spans).
3. ``--tune``: a grid search of the verdict's thresholds maximising the mean of the two families' match rates
   (run it on dev or train, never on test). ``--sample N``: writes N conflict spans with their returned passages to
   ``--sample-out`` for reading by hand.

    python scripts/bench_evidence.py --data pool/dev.jsonl --mode lexical --tune
    python scripts/bench_evidence.py --data pool/test.jsonl --mode lexical --detector sim-overlap --markdown
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import platform
import random
import sys
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.evidence import EvidenceFinder, VerdictSettings
from ragtruth_spans.evidence import finder as finder_module

FAMILY = {"Evident Conflict": "conflict", "Subtle Conflict": "conflict",
          "Evident Baseless Info": "baseless", "Subtle Baseless Info": "baseless"}
EXPECTED = {"conflict": "contradicted", "baseless": "unsupported"}
GRID = {"conflict_relevance": (0.05, 0.1, 0.2), "negation_relevance": (0.4, 0.6, 1.01),
        "unsupported_coverage": (0.4, 0.5, 0.6, 0.7), "name_conflicts": (False, True)}
ENCODER_GRID = {"unsupported_similarity": (0.0, 0.25, 0.35)}


class MemoEncoder:
    """An encoder that computes each claim's embedding once (the grid search encodes the same claims again)."""

    def __init__(self, encoder: Any) -> None:
        self.inner, self.memo = encoder, {}
        self.name_or_path = getattr(encoder, "name_or_path", None)

    def encode(self, texts: list[str]) -> Any:
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if todo:
            self.memo.update(zip(todo, self.inner.encode(todo)))
        return np.stack([self.memo[t] for t in texts])

    def encode_units(self, units: list[str]) -> Any:
        return self.inner.encode_units(units)


def gold_spans(records: list[Record]) -> list[tuple[Record, list[Span]]]:
    """Each record with its gold spans of a RAGTruth type (evidence not yet attached)."""
    return [(r, [s for s in r.spans if s.type in FAMILY]) for r in records if any(s.type in FAMILY for s in r.spans)]


def explained(finder: EvidenceFinder, pairs: list[tuple[Record, list[Span]]]) -> list[tuple[Record, Span]]:
    out = []
    for start in range(0, len(pairs), 32):
        chunk = pairs[start:start + 32]
        for (record, _), spans in zip(chunk, finder.explain_batch([r for r, _ in chunk], [s for _, s in chunk])):
            out += [(record, span) for span in spans]
    return out


def verdict_table(rows: list[tuple[Record, Span]]) -> dict[str, Any]:
    """Counts of verdicts per family (and per task) and the match rates."""
    counts: dict[str, Counter] = {}
    for record, span in rows:
        family = FAMILY[span.type]
        for key in (family, f"{family}/{record.task_type}"):
            counts.setdefault(key, Counter())[span.evidence.verdict] += 1
    rates = {key: c[EXPECTED[key.split("/")[0]]] / sum(c.values()) for key, c in counts.items()}
    balanced = sum(rates.get(f, 0.0) for f in EXPECTED) / len(EXPECTED)
    overall = sum(counts[f][EXPECTED[f]] for f in EXPECTED if f in counts) / max(1, len(rows))
    return {"spans": len(rows), "counts": {k: dict(v) for k, v in sorted(counts.items())}, "match": rates,
            "balanced_match": balanced, "overall_match": overall}


def tune(mode: str, pairs: list[tuple[Record, list[Span]]], encoder: Any) -> tuple[VerdictSettings, dict[str, Any]]:
    grid = GRID | (ENCODER_GRID if mode == "encoder" else {})
    best: tuple[float, VerdictSettings, dict[str, Any]] | None = None
    finder_module.INDEX_CACHE_SIZE = 100_000  # every context indexed once for the whole grid
    finder_module.split_sentences = functools.lru_cache(maxsize=None)(finder_module.split_sentences)
    finder = EvidenceFinder(mode, encoder=encoder)
    for values in itertools.product(*grid.values()):
        settings = VerdictSettings(**dict(zip(grid, values)))
        finder.settings = settings
        table = verdict_table(explained(finder, pairs))
        print(f"{dict(zip(grid, values))}: {table['balanced_match']:.4f}", file=sys.stderr, flush=True)
        if best is None or table["balanced_match"] > best[0] + 1e-12:
            best = (table["balanced_match"], settings, table)
    assert best is not None
    return best[1], best[2]


def throughput(detector_name: str, finder: EvidenceFinder, records: list[Record]) -> dict[str, Any]:
    """Responses/s of the detector alone and with the evidence step (second pass, caches warm for both)."""
    from ragtruth_spans.detectors.loader import load_detector

    detector = load_detector(detector_name)
    detector.detect_batch(records[:8])
    finder.attach_batch(records[:8], detector.detect_batch(records[:8]))
    started = time.perf_counter()
    detections = [d for i in range(0, len(records), 32) for d in detector.detect_batch(records[i:i + 32])]
    detect_s = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(0, len(records), 32):
        finder.attach_batch(records[i:i + 32], detections[i:i + 32])
    evidence_s = time.perf_counter() - started
    spans = sum(len(d.spans) for d in detections)
    return {"detector": detector_name, "responses": len(records), "spans": spans,
            "detect_rps": len(records) / detect_s, "evidence_rps": len(records) / evidence_s,
            "detect_plus_evidence_rps": len(records) / (detect_s + evidence_s),
            "evidence_spans_per_s": spans / evidence_s if evidence_s > 0 else None}


def write_sample(rows: list[tuple[Record, Span]], n: int, seed: int, path: Path) -> None:
    conflicts = [(r, s) for r, s in rows if FAMILY[s.type] == "conflict"]
    chosen = random.Random(seed).sample(conflicts, min(n, len(conflicts)))
    with path.open("w", encoding="utf-8") as fh:
        for k, (record, span) in enumerate(chosen):
            fh.write(f"### {k} id={record.id} task={record.task_type} type={span.type} "
                     f"verdict={span.evidence.verdict}\nSPAN: {record.response[span.start:span.end]!r}\n"
                     f"REASON: {span.evidence.reason}\n")
            for p in span.evidence.passages:
                fh.write(f"  PASSAGE [{p.start},{p.end}) {p.score:.2f}: {record.context[p.start:p.end]!r}\n")
            fh.write("\n")


def markdown(args: argparse.Namespace, table: dict[str, Any], speed: dict[str, Any] | None) -> str:
    lines = [f"Split {args.data} ({table['spans']} typed gold spans), mode `{args.mode}`, machine: "
             f"{platform.processor() or platform.machine()} (CPU-2c, shared).", "",
             "| gold family | spans | contradicted | unsupported | uncertain | verdict matches |",
             "|---|---|---|---|---|---|"]
    for key, c in table["counts"].items():
        total = sum(c.values())
        lines.append(f"| {key} | {total} | {c.get('contradicted', 0)} | {c.get('unsupported', 0)} | "
                     f"{c.get('uncertain', 0)} | {table['match'][key]:.1%} |")
    lines.append(f"\nMean of the two families' match rates: {table['balanced_match']:.1%}; "
                 f"all typed spans: {table['overall_match']:.1%}.")
    if speed:
        lines.append(f"\nThroughput over {speed['responses']} responses ({speed['spans']} spans of "
                     f"`{speed['detector']}`): detection alone {speed['detect_rps']:.1f} responses/s, evidence step "
                     f"alone {speed['evidence_rps']:.1f} responses/s, detection + evidence "
                     f"{speed['detect_plus_evidence_rps']:.1f} responses/s.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="A prepared split (e.g. pool/test.jsonl).")
    parser.add_argument("--mode", default="lexical", choices=("lexical", "encoder"))
    parser.add_argument("--settings", type=Path, default=None, help="Thresholds from a JSON file (e.g. the "
                        "tuned_settings that --tune printed) instead of the shipped ones.")
    parser.add_argument("--tune", action="store_true", help="Grid-search the thresholds on --data (dev/train only).")
    parser.add_argument("--detector", default=None, help="Also time this detector alone and with evidence.")
    parser.add_argument("--sample", type=int, default=0, help="Write N conflict spans with their passages.")
    parser.add_argument("--sample-out", type=Path, default=Path("evidence_sample.txt"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="Print the docs/BENCHMARKS.md section.")
    args = parser.parse_args()
    from ragtruth_spans.core.logs import configure

    configure("normal")  # the script's one set-up of logging: progress on stderr, the libraries quiet
    records = read_records(args.data)
    pairs = gold_spans(records)
    finder = EvidenceFinder(args.mode)
    encoder = MemoEncoder(finder.encoder) if args.mode == "encoder" else None
    finder = EvidenceFinder(args.mode, encoder=encoder)
    if args.settings:
        settings = VerdictSettings(**json.loads(args.settings.read_text(encoding="utf-8")))
        finder = EvidenceFinder(args.mode, settings=settings, encoder=encoder)
    if args.tune:
        settings, table = tune(args.mode, pairs, encoder)
        print(json.dumps({"tuned_settings": asdict(settings), "table": table}, indent=1))
        finder = EvidenceFinder(args.mode, settings=settings, encoder=encoder)
    rows = explained(finder, pairs)
    table = verdict_table(rows)
    print(json.dumps({"settings": finder.describe(), "table": table}, indent=1))
    speed = throughput(args.detector, EvidenceFinder(args.mode, settings=finder.settings, encoder=encoder),
                       records) if args.detector else None
    if speed:
        print(json.dumps(speed, indent=1))
    if args.sample:
        write_sample(rows, args.sample, args.seed, args.sample_out)
        print(f"wrote {args.sample} conflict spans with their passages to {args.sample_out}")
    if args.markdown:
        print(markdown(args, table, speed))


if __name__ == "__main__":
    main()
