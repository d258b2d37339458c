"""Readers of the labelled NLI sets, each in its own original format (the folders of
``../shared/data/external/nli/``, README there), into :class:`~ragtruth_spans.data.nli_pairs.NliPair` lists.

Each reader takes the set's folder and returns ``(pairs, report)``; every file it reads is listed in
``report.details["files"]`` (path relative to the folder → SHA-256). An unknown label, a missing column or field,
a malformed line: one :class:`~ragtruth_spans.core.errors.InputError` naming file, line and field. Splits and label
mappings: docs/DATA.md (``import nli``).
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import re
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.fields import check_unicode
from ragtruth_spans.core.jsonl import file_sha256, iter_jsonl, parse_json_object, read_text
from ragtruth_spans.data.imported import ImportReport, read_csv_strict
from ragtruth_spans.data.nli_pairs import NliPair, PairMaker
from ragtruth_spans.data.records import record_context

logger = logging.getLogger(__name__)

Reader = Callable[[Path], tuple[list[NliPair], ImportReport]]
THREE_WAY = {"entailment": "entailment", "neutral": "neutral", "contradiction": "contradiction"}
FEVER_LABELS = {"SUPPORTS": "entailment", "REFUTES": "contradiction"}
DIALFACT_LABELS = {**FEVER_LABELS, "NOT ENOUGH INFO": "neutral"}
INFOTABS_LABELS = {"E": "entailment", "N": "neutral", "C": "contradiction"}
FAITHDIAL_LABELS = {frozenset({"entailment"}): "entailment", frozenset({"uncooperative"}): "entailment",
                    frozenset({"entailment", "uncooperative"}): "entailment",
                    frozenset({"hallucination"}): "not_entailment",
                    frozenset({"partial hallucination"}): "not_entailment",
                    frozenset({"entailment", "hallucination"}): "not_entailment"}
"""FaithDial's BEGIN labels, normalised (lower-cased, split at ``,`` or ``.``, the typos ``entailmentt`` and
``hallucinated`` read as their words) → pair labels. Uncooperative responses are entailed by the knowledge but
ignore the dialogue (the BEGIN taxonomy): entailment for NLI. Generic and unlabelled responses are skipped."""
_FAITHDIAL_TYPOS = {"entailmentt": "entailment", "hallucinated": "hallucination"}
INFOTABS_FILES = {"train": ("train", None), "dev": ("dev", None), "test_alpha1": ("test", "alpha1"),
                  "test_alpha2": ("test", "alpha2"), "test_alpha3": ("test", "alpha3")}


def _report(source: str, folder: Path) -> ImportReport:
    return ImportReport(importer=source, input_path=str(folder), unit="pairs", details={"files": {}})


def _file(folder: Path, relative: str, report: ImportReport) -> Path:
    """``folder/relative``, fingerprinted in ``report``; a missing file is an :class:`InputError`."""
    path = folder / relative
    if not path.is_file():
        raise InputError("file not found (the set's folder as its repository lays it out: see docs/DATA.md)",
                         path=path)
    report.details["files"][relative] = file_sha256(path)
    return path


def _label(value: str, labels: Mapping[str, str], path: Path, line: int, field: str) -> str:
    label = labels.get(value.strip())
    if label is None:
        raise InputError(f"unknown label {value!r:.60} (expected one of {', '.join(labels)})", path=path,
                         line=line, field=field)
    return label


def _aligned_lines(paths: list[Path]) -> list[list[str]]:
    """The lines of files aligned line by line (one column each, a final newline allowed); a file whose line
    count differs from the first's is an :class:`InputError` naming it and the first line past the shorter."""
    columns = [read_text(path).split("\n") for path in paths]
    for path, lines in zip(paths, columns):
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) != len(columns[0]):
            raise InputError(f"{len(lines)} lines where {paths[0].name} has {len(columns[0])} (the files are "
                             "aligned line by line)", path=path, line=min(len(lines), len(columns[0])) + 1)
    return columns


def read_esnli(folder: Path) -> tuple[list[NliPair], ImportReport]:
    """e-SNLI's ``dataset/eSNLI/{s1,s2,labels}.{dev,test}`` (one text a line, aligned; PTB-tokenised SNLI text,
    detokenised here). SNLI dev → train, SNLI test → test."""
    report = _report("snli", folder)
    maker = PairMaker("snli", report, binary=False, tokenised=True)
    for part, split in (("dev", "train"), ("test", "test")):
        paths = [_file(folder, f"dataset/eSNLI/{name}.{part}", report) for name in ("s1", "s2", "labels")]
        columns = _aligned_lines(paths)
        for line, (premise, hypothesis, label) in enumerate(zip(*columns), start=1):
            maker.add(f"snli-{part}-{line:06d}", premise, hypothesis,
                      _label(label, THREE_WAY, paths[2], line, "label"), split, path=paths[0], line=line,
                      fields=("s1", "s2"))
    return maker.pairs, report


def _read_tsv_three_way(folder: Path, source: str, files: Mapping[str, str], premise: str, hypothesis: str,
                        label: str, *, subset: str | None = None) -> tuple[list[NliPair], ImportReport]:
    """Plain TSV files (``"`` is text) with a header: ``{relative path: split}``; ``subset`` names a column."""
    report = _report(source, folder)
    maker = PairMaker(source, report, binary=False)
    for relative, split in files.items():
        path = _file(folder, relative, report)
        tag = f"{split}-" if len(files) > 1 else ""
        columns = [premise, hypothesis, label, *([subset] if subset else [])]
        for line, row in read_csv_strict(path, columns, delimiter="\t", quoting=csv.QUOTE_NONE):
            maker.add(f"{source}-{tag}{line:06d}", row[premise], row[hypothesis],
                      _label(row[label], THREE_WAY, path, line, label), split, path=path, line=line,
                      fields=(premise, hypothesis), subset=row[subset] if subset else None)
    return maker.pairs, report


def read_taxinli(folder: Path) -> tuple[list[NliPair], ImportReport]:
    """TaxiNLI's ``taxinli10k.tsv`` (MultiNLI pairs: ``prem``, ``hyp``, ``label``, ``genre``): all train, the
    genre as ``subset``."""
    return _read_tsv_three_way(folder, "multinli", {"taxinli10k.tsv": "train"}, "prem", "hyp", "label",
                               subset="genre")


def read_cad(folder: Path) -> tuple[list[NliPair], ImportReport]:
    """Counterfactually augmented SNLI, ``NLI/all_combined/{train,dev,test}.tsv``: each split kept."""
    files = {f"NLI/all_combined/{split}.tsv": split for split in ("train", "dev", "test")}
    return _read_tsv_three_way(folder, "cad", files, "sentence1", "sentence2", "gold_label")


def read_breaking_nli(folder: Path) -> tuple[list[NliPair], ImportReport]:
    """Breaking NLI: ``data/dataset.jsonl`` read from ``breaking_nli_dataset.zip`` (not extracted); all train,
    the swap's ``category`` as ``subset``."""
    report = _report("breaking_nli", folder)
    maker = PairMaker("breaking_nli", report, binary=False)
    archive = _file(folder, "breaking_nli_dataset.zip", report)
    where = f"{archive}!data/dataset.jsonl"
    try:
        with zipfile.ZipFile(archive) as opened:
            data = opened.read("data/dataset.jsonl")
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        raise InputError(f"cannot read data/dataset.jsonl from the zip: {exc}", path=archive) from None
    for line, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not valid UTF-8", path=where, line=line) from None
        if not text.strip():
            continue
        obj = parse_json_object(text, where, line)
        premise, hypothesis, label, category = (_field(obj, key, where, line) for key in
                                                ("sentence1", "sentence2", "gold_label", "category"))
        maker.add(f"breaking_nli-{line:06d}", premise, hypothesis,
                  _label(_text(label, where, line, "gold_label"), THREE_WAY, Path(where), line, "gold_label"),
                  "train", path=where, line=line, fields=("sentence1", "sentence2"),
                  subset=_text(category, where, line, "category"))
    return maker.pairs, report


def _field(obj: Mapping[str, Any], key: str, path: Any, line: int) -> Any:
    if key not in obj:
        raise InputError("missing field", path=path, line=line, field=key)
    return obj[key]


def _text(value: Any, path: Any, line: int, field: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"must be a string, got {type(value).__name__}", path=path, line=line, field=field)
    return value


def read_fever_rte(folder: Path) -> tuple[list[NliPair], ImportReport]:
    """FEVER in RTE form, ``RTE-Fever/processed/dev.raw.input0`` (evidence, PTB-tokenised: detokenised),
    ``dev.raw.input1`` (claim), ``dev.label`` (entailment / not_entailment): binary, all train."""
    report = _report("fever_rte", folder)
    maker = PairMaker("fever_rte", report, binary=True, tokenised=True)
    names = ("dev.raw.input0", "dev.raw.input1", "dev.label")
    paths = [_file(folder, f"RTE-Fever/processed/{name}", report) for name in names]
    columns = _aligned_lines(paths)
    labels = {"entailment": "entailment", "not_entailment": "not_entailment"}
    for line, (evidence, claim, label) in enumerate(zip(*columns), start=1):
        maker.add(f"fever_rte-{line:06d}", evidence, claim, _label(label, labels, paths[2], line, "label"),
                  "train", path=paths[0], line=line, fields=("input0", "input1"))
    return maker.pairs, report


def read_fever_symmetric(folder: Path) -> tuple[list[NliPair], ImportReport]:
    """FEVER-Symmetric v0.2, ``symmetric_v0.2/fever_symmetric_{dev,test}.jsonl`` (``evidence`` → ``claim``,
    ``gold_label`` SUPPORTS / REFUTES → entailment / contradiction, binary; PTB-tokenised: detokenised)."""
    report = _report("fever_symmetric", folder)
    maker = PairMaker("fever_symmetric", report, binary=True, tokenised=True)
    for split in ("dev", "test"):
        path = _file(folder, f"symmetric_v0.2/fever_symmetric_{split}.jsonl", report)
        for line, obj in iter_jsonl(path):
            label = _text(_field(obj, "gold_label", path, line), path, line, "gold_label")
            maker.add(f"fever_symmetric-{split}-{line:06d}", _field(obj, "evidence", path, line),
                      _field(obj, "claim", path, line), _label(label, FEVER_LABELS, path, line, "gold_label"),
                      split, path=path, line=line, fields=("evidence", "claim"))
    return maker.pairs, report


def faithdial_label(value: str) -> str | None:
    """FaithDial's BEGIN label normalised (:data:`FAITHDIAL_LABELS`): the pair label, None for a response to
    skip (generic, or no label); an unknown label raises ``KeyError``.

    >>> [faithdial_label(v) for v in ("Partial Hallucination", "entailment. uncooperative", "hallucinated", "")]
    ['not_entailment', 'entailment', 'not_entailment', None]
    """
    parts = frozenset(_FAITHDIAL_TYPOS.get(p, p) for p in (" ".join(x.split()) for x in
                                                          re.split(r"[,.]", value.casefold())) if p)
    if not parts or parts == {"generic"}:
        return None
    return FAITHDIAL_LABELS[parts]


def read_faithdial(folder: Path) -> tuple[list[NliPair], ImportReport]:
    """FaithDial's audit, ``data-audit/{CTRL,DoHA,GPT2,gold}/*.csv``: knowledge → response (the generators'
    files: ``knowledge``, the system's column, ``begin_label``; gold: ``evidence``, ``response``, ``BEGIN``);
    labels normalised (:func:`faithdial_label`), binary, all train; ``subset`` = ``folder/file``."""
    report = _report("faithdial", folder)
    maker = PairMaker("faithdial", report, binary=True, tokenised=True)
    files = sorted((folder / "data-audit").glob("*/*.csv"))
    if not files:
        raise InputError("no data-audit/<system>/*.csv file here (FaithDial's data-audit folder)", path=folder)
    for path in files:
        relative = path.relative_to(folder).as_posix()
        _file(folder, relative, report)
        gold = path.parent.name == "gold"
        system = path.parent.name.lower()
        knowledge, response, label = ("evidence", "response", "BEGIN") if gold else ("knowledge", system,
                                                                                     "begin_label")
        subset = f"{path.parent.name}/{path.stem}"
        for line, row in read_csv_strict(path, (knowledge, response, label), multiline=True):
            try:
                pair_label = faithdial_label(row[label])
            except KeyError:
                raise InputError(f"unknown BEGIN label {row[label]!r:.60} (known: hallucination, partial "
                                 "hallucination, entailment, generic, uncooperative)", path=path, line=line,
                                 field=label) from None
            if pair_label is None:
                report.input += 1
                report.skip("generic response" if row[label].strip() else "no label")
                continue
            maker.add(f"faithdial-{subset.lower().replace('/', '-')}-{line:06d}", row[knowledge], row[response],
                      pair_label, "train", path=path, line=line, fields=(knowledge, response), subset=subset)
    return maker.pairs, report


def read_q2(folder: Path) -> tuple[list[NliPair], ImportReport]:
    """Q²'s ``third_party/data/{dodeca,memnet}_{consistent,inconsistent}.csv`` (``knowledge`` → ``response``;
    the label is the file's: consistent → entailment, inconsistent → not_entailment), binary, all train."""
    report = _report("q2", folder)
    maker = PairMaker("q2", report, binary=True)
    for system in ("dodeca", "memnet"):
        for kind, label in (("consistent", "entailment"), ("inconsistent", "not_entailment")):
            relative = f"third_party/data/{system}_{kind}.csv"
            path = _file(folder, relative, report)
            for line, row in read_csv_strict(path, ("knowledge", "response"), multiline=True):
                maker.add(f"q2-{system}-{kind}-{line:06d}", row["knowledge"], row["response"], label, "train",
                          path=path, line=line, fields=("knowledge", "response"), subset=system)
    return maker.pairs, report


def read_dialfact(folder: Path) -> tuple[list[NliPair], ImportReport]:
    """DialFact's ``scripts/testsmall.jsonl``: the texts of ``evidence_list`` (entries ``[title, url, text,
    ...]``, repeated texts once) joined as the premise, ``response`` the hypothesis; SUPPORTS / REFUTES / NOT
    ENOUGH INFO → entailment / contradiction / neutral; all test."""
    report = _report("dialfact", folder)
    maker = PairMaker("dialfact", report, binary=False)
    path = _file(folder, "scripts/testsmall.jsonl", report)
    for line, obj in iter_jsonl(path):
        evidence = _field(obj, "evidence_list", path, line)
        if not isinstance(evidence, list):
            raise InputError("must be a list of [title, url, text, ...] entries", path=path, line=line,
                             field="evidence_list")
        texts: list[str] = []
        for index, entry in enumerate(evidence):
            if not isinstance(entry, list) or len(entry) < 3:
                raise InputError("must be a list [title, url, text, ...]", path=path, line=line,
                                 field=f"evidence_list[{index}]")
            text = " ".join(_text(entry[2], path, line, f"evidence_list[{index}][2]").split())
            if text and text not in texts:
                texts.append(text)
        label = _text(_field(obj, "response_label", path, line), path, line, "response_label")
        maker.add(f"dialfact-{line:06d}", " ".join(texts), _field(obj, "response", path, line),
                  _label(label, DIALFACT_LABELS, path, line, "response_label"), "test", path=path, line=line,
                  fields=("evidence_list", "response"))
    return maker.pairs, report


def infobox_context(items: Any, path: Path) -> tuple[str, int]:
    """``(context, keys merged)``: an InfoTabs infobox, given as its ``(key, list of values)`` items, as the
    detector reads a Data2txt JSON record (:func:`~ragtruth_spans.data.records.record_context`): a value list of
    one item written as that item; a key given twice (three tables do) keeps both value lists, merged in order.

    >>> infobox_context([("title", ["Ok"]), ("Genre", ["art rock"]), ("Genre", ["art pop"])], Path("T0.json"))
    ('{"title": "Ok", "Genre": ["art rock", "art pop"]}', 1)
    """
    if not isinstance(items, list) or not all(isinstance(item, tuple) for item in items):
        raise InputError("an infobox must be a JSON object of key → list of values", path=path)
    merged: dict[str, list[str]] = {}
    for key, values in items:
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InputError("must be a list of strings", path=path, field=key)
        merged.setdefault(key, []).extend(values)
    shaped = {key: values[0] if len(values) == 1 else values for key, values in merged.items()}
    return check_unicode(record_context(shaped), path=path), len(items) - len(merged)


def read_infotabs(folder: Path) -> tuple[list[NliPair], ImportReport]:
    """InfoTabs' ``data/maindata/infotabs_<split>.tsv`` (``table_id``, ``hypothesis``, ``label`` E/N/C) against
    ``data/tables/json/<table_id>.json`` (:func:`infobox_context`); train, dev, and α1–α3 as test (``subset``
    alpha1..alpha3). The tables read are fingerprinted together (``tables/json`` in ``files``)."""
    report = _report("infotabs", folder)
    maker = PairMaker("infotabs", report, binary=False)
    tables: dict[str, tuple[str, str]] = {}
    for name, (split, subset) in INFOTABS_FILES.items():
        path = _file(folder, f"data/maindata/infotabs_{name}.tsv", report)
        for line, row in read_csv_strict(path, ("table_id", "hypothesis", "label"), delimiter="\t",
                                         quoting=csv.QUOTE_NONE):
            table_id = row["table_id"].strip()
            if table_id not in tables:
                tables[table_id] = _table(folder, table_id, path, line, report)
            maker.add(f"infotabs-{name.replace('_', '-')}-{line:06d}", tables[table_id][0], row["hypothesis"],
                      _label(row["label"], INFOTABS_LABELS, path, line, "label"), split, path=path, line=line,
                      fields=("table_id", "hypothesis"), subset=subset)
    digest = hashlib.sha256("".join(f"{t}\0{sha}\n" for t, (_, sha) in sorted(tables.items())).encode())
    report.details["files"]["data/tables/json"] = f"{len(tables)} tables, sha256 of their sorted id+sha256 " \
                                                  f"lines: {digest.hexdigest()}"
    report.details["tables"] = len(tables)
    return maker.pairs, report


def _table(folder: Path, table_id: str, tsv: Path, line: int, report: ImportReport) -> tuple[str, str]:
    """``(context, sha256)`` of the infobox ``table_id``; a bad id or a missing table names the TSV line."""
    if not re.fullmatch(r"T\d+", table_id):
        raise InputError(f"not a table id {table_id!r:.40} (T<number>)", path=tsv, line=line, field="table_id")
    path = folder / "data" / "tables" / "json" / f"{table_id}.json"
    if not path.is_file():
        raise InputError(f"no table {path.relative_to(folder)}", path=tsv, line=line, field="table_id")
    try:
        items = json.loads(read_text(path), object_pairs_hook=list)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"invalid JSON: {str(exc)[:80]}", path=path) from None
    context, merged = infobox_context(items, path)
    if merged:
        report.repair("infobox key given twice (value lists merged)", merged)
    return context, file_sha256(path) or ""


SET_READERS: dict[str, tuple[str, Reader]] = {
    "cad": ("cad", read_cad), "snli": ("esnli", read_esnli), "multinli": ("taxinli", read_taxinli),
    "breaking_nli": ("breaking_nli", read_breaking_nli), "fever_symmetric": ("fever_symmetric", read_fever_symmetric),
    "fever_rte": ("fever_rte", read_fever_rte), "faithdial": ("faithdial_audit", read_faithdial), "q2": ("q2", read_q2),
    "dialfact": ("dialfact", read_dialfact), "infotabs": ("infotabs", read_infotabs),
}
"""Every set: its name (the pairs' ``source``, ``--only``) → (its folder under the NLI directory, its reader), in
the order of the output files and of ties between duplicates (the first copy kept): a set built from another
comes before it and so stays whole (CAD test keeps its original SNLI pairs, which SNLI test then lacks)."""
