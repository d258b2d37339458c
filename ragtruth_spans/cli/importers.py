"""``ragtruth-spans import jsonl|summedits|xsum-hallucinations|expertqa|begin``: annotated data → a prepared directory
(train/dev/test.jsonl + stats.json, as ``prepare`` writes) that ``train`` reads as ``data.prepared_dir`` or as a
training-only ``data.extra`` source; ``import nli``: labelled NLI sets → a prepared NLI directory of
premise–hypothesis pairs (the entailment family's training data). Formats: docs/DATA.md."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer

from ragtruth_spans.cli.common import app, note, out, user_errors

import_app = typer.Typer(no_args_is_help=True, help="Import annotated data (your own JSONL, or a public set in its "
                                                     "original format) into a prepared directory.")
app.add_typer(import_app, name="import")

OUT_HELP = "Output folder for train/dev/test.jsonl and stats.json (the prepared directory)."
SPLIT_HELP = ("Seeded re-split by source, per task: shares 'train=0.7,dev=0.15,test=0.15' (the default) or counts "
              "'dev=10,test=20'; 'train=1' puts everything in train.")


def _run(read: Callable[[], tuple[list[Any], Any]], in_path: Path, out_dir: Path, split_by_source: str | None,
         seed: int) -> None:
    """Import: ``--out`` checked and locked before ``--in`` is read, the prepared directory swapped in whole
    (:func:`~ragtruth_spans.data.prepare.prepared_output`)."""
    from ragtruth_spans.data.imported import write_splits
    from ragtruth_spans.data.prepare import prepared_output
    from ragtruth_spans.data.splits import parse_split_spec
    from ragtruth_spans.reporting.data_tables import import_summary

    with user_errors():
        spec = parse_split_spec(split_by_source) if split_by_source is not None else None
        with prepared_output(out_dir, field="--out", inputs=[("--in", in_path)]) as building:
            records, report = read()
            stats = write_splits(building, records, report, split_spec=spec, seed=seed, out_dir=out_dir)
    out.print(import_summary(stats))
    note(f"wrote {out_dir}/{{train,dev,test}}.jsonl and {out_dir}/stats.json")


@import_app.command("jsonl")
def import_jsonl(
    in_file: Path = typer.Option(..., "--in", help="Your JSONL: context, response, spans [{start, end, type?}], "
                                 "optional question, task, id, source_id, model, split (docs/DATA.md)."),
    out_dir: Path = typer.Option(..., "--out", help=OUT_HELP),
    split_by_source: Optional[str] = typer.Option(None, "--split-by-source", help=SPLIT_HELP + " Not with "
                                                  "records that carry a split."),
    seed: int = typer.Option(0, "--seed", help="Seed of the re-split."),
) -> None:
    """Your own annotated data in the minimal format; every defaulted field is counted."""
    from ragtruth_spans.data.own_jsonl import read_own_jsonl

    _run(lambda: read_own_jsonl(in_file), in_file, out_dir, split_by_source, seed)


@import_app.command("summedits")
def import_summedits(
    in_dir: Path = typer.Option(..., "--in", help="SummEdits' data/summedits/ folder (summedits_<domain>.json)."),
    out_dir: Path = typer.Option(..., "--out", help=OUT_HELP),
    split_by_source: Optional[str] = typer.Option(None, "--split-by-source", help=SPLIT_HELP),
    seed: int = typer.Option(0, "--seed", help="Seed of the re-split."),
) -> None:
    """SummEdits (Apache-2.0): spans = the words an inconsistent summary changed against its original."""
    from ragtruth_spans.data.summedits import read_summedits

    _run(lambda: read_summedits(in_dir), in_dir, out_dir, split_by_source, seed)


@import_app.command("xsum-hallucinations")
def import_xsum(
    in_dir: Path = typer.Option(..., "--in", help="Folder with hallucination_annotations_xsum_summaries.csv and "
                                "articles/<bbcid>.json."),
    out_dir: Path = typer.Option(..., "--out", help=OUT_HELP),
    min_votes: int = typer.Option(2, "--min-votes", min=1, help="Annotators (of 3) who must mark a character."),
    split_by_source: Optional[str] = typer.Option(None, "--split-by-source", help=SPLIT_HELP),
    seed: int = typer.Option(0, "--seed", help="Seed of the re-split."),
) -> None:
    """XSum hallucination annotations (Maynez et al. 2020, CC BY 4.0): spans marked by --min-votes annotators."""
    from ragtruth_spans.data.xsum_hallucinations import read_xsum_hallucinations

    _run(lambda: read_xsum_hallucinations(in_dir, min_votes=min_votes), in_dir, out_dir, split_by_source, seed)


@import_app.command("expertqa")
def import_expertqa(
    in_dir: Path = typer.Option(..., "--in", help="ExpertQA's data/lfqa/ folder (*.jsonl)."),
    out_dir: Path = typer.Option(..., "--out", help=OUT_HELP),
    min_context: int = typer.Option(200, "--min-context", min=0, help="Skip answers whose cited evidence is "
                                    "shorter (characters, without citation marks and links)."),
    keep_link_only: bool = typer.Option(False, "--keep-link-only", help="Keep the answers whose cited evidence is "
                                        "only citation marks and links (counted; as training data they help "
                                        "recommended-cpu, docs/BENCHMARKS.md)."),
    partial: bool = typer.Option(True, "--partial/--no-partial", help="Mark claims judged Partial/Incomplete "
                                 "(Subtle Baseless Info) beside Missing ones."),
    split_by_source: Optional[str] = typer.Option(None, "--split-by-source", help=SPLIT_HELP),
    seed: int = typer.Option(0, "--seed", help="Seed of the re-split."),
) -> None:
    """ExpertQA (MIT): claims whose cited evidence does not support them become spans."""
    from ragtruth_spans.data.expertqa import read_expertqa

    _run(lambda: read_expertqa(in_dir, min_context=min_context, partial=partial, keep_link_only=keep_link_only),
         in_dir, out_dir, split_by_source, seed)


@import_app.command("begin")
def import_begin(
    in_dir: Path = typer.Option(..., "--in", help="BEGIN's data folder (begin_<split>_<set>.tsv files, found in "
                                "subfolders too)."),
    out_dir: Path = typer.Option(..., "--out", help=OUT_HELP),
    split_by_source: Optional[str] = typer.Option(None, "--split-by-source", help=SPLIT_HELP),
    seed: int = typer.Option(0, "--seed", help="Seed of the re-split."),
) -> None:
    """BEGIN (CC BY 4.0; Topical-Chat part CDLA-Sharing-1.0): response-level labels, no spans ("Not fully
    attributable" responses are marked unlocated; "Generic" ones are skipped)."""
    from ragtruth_spans.data.begin import read_begin

    _run(lambda: read_begin(in_dir), in_dir, out_dir, split_by_source, seed)


@import_app.command("nli")
def import_nli_sets(
    nli_dir: Path = typer.Option(..., "--nli-dir", help="The NLI directory: one folder per set in its original "
                                 "format (esnli/, taxinli/, cad/, breaking_nli/, fever_rte/, fever_symmetric/, "
                                 "faithdial_audit/, q2/, dialfact/, infotabs/; docs/DATA.md)."),
    out_dir: Path = typer.Option(..., "--out", help="Output folder for train/dev/test.jsonl of pairs and "
                                 "stats.json (the prepared NLI directory)."),
    only: Optional[str] = typer.Option(None, "--only", help="Sets to read, comma-separated (snli, multinli, cad, "
                                       "breaking_nli, fever_rte, fever_symmetric, faithdial, q2, dialfact, "
                                       "infotabs); default all, each folder then required."),
) -> None:
    """Labelled NLI sets (each under its own licence, NOTICE) → premise–hypothesis pairs: three-way or binary
    labels, the sets' own dev and test splits kept, duplicates across sets removed (counted)."""
    from ragtruth_spans.data.nli import import_nli, parse_only
    from ragtruth_spans.reporting.data_tables import nli_import_summary

    with user_errors():
        stats = import_nli(nli_dir, out_dir, parse_only(only))
    out.print(nli_import_summary(stats))
    note(f"wrote {out_dir}/{{train,dev,test}}.jsonl and {out_dir}/stats.json")


def _parse_extras(values: list[str]) -> dict[str, Path]:
    """``--extra NAME=DIR`` values → ``{name: folder}``; a value without a name, or a name given twice, is an
    :class:`~ragtruth_spans.core.errors.InputError`."""
    from ragtruth_spans.core.errors import InputError

    extras: dict[str, Path] = {}
    for value in values:
        name, sep, folder = value.partition("=")
        if not sep or not name.strip() or not folder.strip():
            raise InputError(f"expected NAME=DIR (e.g. summedits=data/summedits), got {value!r}", field="--extra")
        if name.strip() in extras:
            raise InputError(f"the extra {name.strip()!r} is given twice", field="--extra")
        extras[name.strip()] = Path(folder.strip())
    return extras


@import_app.command("nli-sentences")
def import_nli_sentences(
    prepared: Path = typer.Option(..., "--prepared", help="A prepared directory (ragtruth-spans prepare or "
                                  "import): pairs from its train and dev splits; its test split is never read."),
    out_dir: Path = typer.Option(..., "--out", help="Output folder for train/dev/test.jsonl of pairs and "
                                 "stats.json (a prepared NLI directory; test.jsonl stays empty)."),
    source: str = typer.Option("ragtruth", "--source", help="The source name of the pairs of --prepared."),
    extra: list[str] = typer.Option([], "--extra", help="NAME=DIR: another prepared directory whose train split "
                                    "adds pairs (source NAME), e.g. summedits=data/summedits; repeatable."),
    replay: Optional[Path] = typer.Option(None, "--replay", help="A prepared NLI directory (import nli) whose "
                                          "train.jsonl gives a seeded sample, copied as it is."),
    replay_pairs: int = typer.Option(0, "--replay-pairs", min=0, help="Pairs sampled from --replay."),
    recipe: str = typer.Option("entailment-minilm-rag", "--recipe", help="The entailment recipe whose run reads "
                               "these pairs: its model.max_length and detection settings choose the premises."),
    seed: int = typer.Option(0, "--seed", help="Seed of the replay sample."),
) -> None:
    """A task's own labels → NLI pairs: each response sentence against the context windows the entailment
    detector judges it by, contradiction / neutral / entailment from the gold spans (docs/ENTAILMENT.md)."""
    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.detectors.entailment.recipe import EntailmentRecipe
    from ragtruth_spans.detectors.entailment.task_pairs import import_task_pairs, pair_detector
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.reporting.data_tables import nli_import_summary

    with user_errors():
        read = load_recipe(recipe)
        if not isinstance(read, EntailmentRecipe):
            raise InputError(f"is a {read.kind} recipe, not an entailment one", path=recipe, field="--recipe")
        if replay_pairs and replay is None:
            raise InputError("needs --replay (the NLI directory to sample from)", field="--replay-pairs")
        stats = import_task_pairs(prepared, out_dir, pair_detector(read), source=source, extras=_parse_extras(extra),
                                  replay=replay, replay_pairs=replay_pairs, seed=seed)
    out.print(nli_import_summary(stats))
    skipped = {name: sum(sum(s["skipped"].values()) for s in splits.values())
               for name, splits in stats["sentences"].items()}
    note("sentences skipped (labelled as a whole, more than one sentence): "
         + ", ".join(f"{name} {n}" for name, n in skipped.items()))
    note(f"wrote {out_dir}/{{train,dev,test}}.jsonl and {out_dir}/stats.json")
