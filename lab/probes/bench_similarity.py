"""Time the similarity baselines against encoding every distinct sentence once.

The reference ("encode once") loads the same sentence encoder, splits every distinct context into its evidence
units and every response into its sentences, and encodes each distinct text once in one call: the least work a
cosine baseline must do. Each baseline (``sim-cosine``, ``sim-overlap``, ``sim-hybrid``, ``keyword-match``) is then
timed on the same responses, each in a fresh process (imports, model load and pysbd included, nothing cached),
and the ratio to the reference is reported; ``sim-hybrid`` is also timed after ``sim-cosine`` and ``sim-overlap``
in one process, as ``benchmark`` runs them (it reuses their supports).

    python lab/probes/bench_similarity.py --data pool/test.jsonl            # table
    python lab/probes/bench_similarity.py --data pool/test.jsonl --markdown # + the docs/BENCHMARKS.md rows
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

BASELINES = ("sim-cosine", "sim-overlap", "sim-hybrid", "keyword-match")
REFERENCE = "encode-once"


def encode_once(records: list) -> dict:
    """The reference: load the encoder, split, encode each distinct context unit and response sentence once."""
    from ragtruth_spans.detectors.shared.encoder import SentenceEncoder
    from ragtruth_spans.detectors.shared.sentences import evidence_units, split_sentences

    encoder = SentenceEncoder()
    texts: dict[str, None] = {}
    contexts = {(r.context, r.task_type, r.question) for r in records}
    for context, task, question in contexts:
        texts.update(dict.fromkeys(evidence_units(context, task, question)))
    for r in records:
        texts.update(dict.fromkeys(r.response[a:b] for a, b in split_sentences(r.response)))
    encoder.encode(list(texts))
    return {"distinct_texts": len(texts), "contexts": len(contexts)}


def run_one(name: str, data: str) -> dict:
    """Time one measurement in this process (called in a fresh process by :func:`main`)."""
    started = time.perf_counter()
    from ragtruth_spans.core.jsonl import read_records

    records = read_records(data)
    extra: dict = {}
    if name == REFERENCE:
        extra = encode_once(records)
    elif name == "sim-hybrid-after":
        from ragtruth_spans.detectors.loader import load_detector

        for first in ("sim-cosine", "sim-overlap"):
            load_detector(first).detect_batch(records)
        started = time.perf_counter()
        detections = load_detector("sim-hybrid").detect_batch(records)
        extra = {"flagged": sum(bool(d.spans) for d in detections)}
    else:
        from ragtruth_spans.detectors.loader import load_detector

        detections = load_detector(name).detect_batch(records)
        extra = {"flagged": sum(bool(d.spans) for d in detections)}
    return {"name": name, "seconds": round(time.perf_counter() - started, 2), "responses": len(records), **extra}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="prepared JSONL (e.g. the pool's test.jsonl)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    from ragtruth_spans.core.logs import configure

    configure("normal")  # the script's one set-up of logging: progress on stderr, the libraries quiet
    if args.one:
        print(json.dumps(run_one(args.one, args.data)))
        return
    rows = []
    for name in (REFERENCE, *BASELINES, "sim-hybrid-after"):
        out = subprocess.run([sys.executable, __file__, "--data", args.data, "--one", name], check=True,
                             capture_output=True, text=True).stdout.strip().splitlines()[-1]
        rows.append(json.loads(out))
        print(rows[-1], file=sys.stderr, flush=True)
    reference = rows[0]["seconds"]
    lines = ["| run | seconds | responses/s | × encode-once | responses flagged |", "|---|---:|---:|---:|---:|"]
    for row in rows:
        label = "sim-hybrid after sim-cosine and sim-overlap" if row["name"] == "sim-hybrid-after" else row["name"]
        flagged = row.get("flagged", f"{row.get('distinct_texts')} distinct texts")
        lines.append(f"| {label} | {row['seconds']:.1f} | {row['responses'] / row['seconds']:.1f} | "
                     f"{row['seconds'] / reference:.2f} | {flagged} |")
    print("\n".join(lines) if args.markdown else "\n".join(lines[2:]))


if __name__ == "__main__":
    main()
