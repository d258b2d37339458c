"""Read the official RAGTruth files and turn every response into a :class:`~ragtruth_spans.core.types.Record`.

A RAGTruth directory (the ``dataset/`` folder of https://github.com/ParticleMedia/RAGTruth) holds:

- ``response.jsonl``: one generated response per line with ``id``, ``source_id``, ``model``, ``split``
  (``train`` | ``test``), ``quality``, ``response`` and ``labels`` (``start``, ``end``, ``text``,
  ``label_type``, ``implicit_true``, ``due_to_null``, ``meta``);
- ``source_info.jsonl``: one source per line with ``source_id``, ``task_type`` (``QA`` | ``Summary`` |
  ``Data2txt``) and ``source_info`` (QA: ``{"question", "passages"}``; Summary: the article; Data2txt: the
  business JSON object).

Responses are joined to sources on ``source_id``. Offsets are characters of the response, half-open.

Label policy (each case is counted in :class:`LabelReport`, nothing is dropped or kept wrong silently):

- **exact**: ``response[start:end] == text``; kept as is.
- **repaired**: the text is not at the given offsets but occurs *unambiguously nearby*: exactly one
  occurrence of the label text starts within :data:`REPAIR_WINDOW` characters of the given ``start``. If the
  text itself is not found, its whitespace-stripped form is tried the same way. The span moves to that
  occurrence (and takes the stripped text when that matched).
- **unrepairable**: offsets inside the response but no unambiguous nearby occurrence (none, or several), or an
  empty label text; the label is dropped from ``spans`` and listed with its reason.
- Offsets outside the response (``start < 0``, ``end < start`` or ``end > len(response)``) that cannot be
  repaired as above are malformed input: :class:`~ragtruth_spans.core.errors.InputError`.
- **duplicates**: after checking, labels with the same ``(start, end, type)`` are kept once (the first one,
  with its flags) and the others counted.
- **overlaps**: overlapping labels (of the same or different types) are all kept; the evaluator merges
  intervals, so a character counts once. Overlapping pairs are counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.fields import check_bool, check_id, check_text, check_unicode
from ragtruth_spans.core.jsonl import iter_jsonl
from ragtruth_spans.core.types import HALLUCINATION_TYPES, TASK_TYPES, Record, Span
from ragtruth_spans.data.records import record_context

RESPONSE_FILE = "response.jsonl"
SOURCE_FILE = "source_info.jsonl"
RAGTRUTH_SPLITS: tuple[str, ...] = ("train", "test")
REPAIR_WINDOW = 50
"""A mismatched label is repaired only to an occurrence whose start is at most this many characters away."""

_RESPONSE_FIELDS = ("id", "source_id", "model", "split", "quality", "response", "labels")
_LABEL_FIELDS = ("start", "end", "text", "label_type")


def sample_data_dir() -> Path:
    """The embedded RAGTruth-format sample shipped with the package (``response.jsonl`` + ``source_info.jsonl``).

    It is invented text in the official format, with train and test responses of all three tasks; see its
    ``README.md``.

    >>> from ragtruth_spans import sample_data_dir
    >>> sorted(p.name for p in sample_data_dir().glob("*.jsonl"))
    ['response.jsonl', 'source_info.jsonl']
    """
    return Path(__file__).resolve().parent / "sample_data"


def resolve_files(ragtruth_dir: str | Path) -> tuple[Path, Path]:
    """``(response.jsonl, source_info.jsonl)`` of a RAGTruth directory.

    Accepts the ``dataset/`` folder itself or the root of a RAGTruth clone (then ``dataset/`` is used).
    """
    root = Path(ragtruth_dir)
    if not root.is_dir():
        raise InputError("RAGTruth directory not found", path=root)
    for folder in (root, root / "dataset"):
        if (folder / RESPONSE_FILE).is_file() and (folder / SOURCE_FILE).is_file():
            return folder / RESPONSE_FILE, folder / SOURCE_FILE
    raise InputError(f"expected {RESPONSE_FILE} and {SOURCE_FILE} here (or under dataset/)", path=root)


# --- sources -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """One line of ``source_info.jsonl`` turned into the record's context fields."""

    source_id: str
    task_type: str
    context: str
    question: str | None


def _require(obj: dict[str, Any], key: str, path: Path, line: int, prefix: str = "") -> Any:
    if key not in obj:
        raise InputError("missing required field", path=path, line=line, field=prefix + key)
    return obj[key]


def _as_id(value: Any, path: Path, line: int, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise InputError(f"must be a non-empty string or integer, got {type(value).__name__}", path=path, line=line,
                         field=name)
    return str(check_id(value, path=path, line=line, field=name))


def _source_from_json(obj: dict[str, Any], path: Path, line: int) -> Source:
    source_id = _as_id(_require(obj, "source_id", path, line), path, line, "source_id")
    task_type = _require(obj, "task_type", path, line)
    check_choice(task_type, TASK_TYPES, "task type", path=path, line=line, field="task_type")
    info = _require(obj, "source_info", path, line)
    if task_type == "QA":
        if not isinstance(info, dict):
            raise InputError("a QA source must be an object with 'question' and 'passages'",
                             path=path, line=line, field="source_info")
        question = _require(info, "question", path, line, "source_info.")
        passages = _require(info, "passages", path, line, "source_info.")
        for name, value in (("question", question), ("passages", passages)):
            check_text(value, path=path, line=line, field=f"source_info.{name}")
        return Source(source_id, task_type, passages, question)
    if task_type == "Summary":
        if not isinstance(info, str):
            raise InputError("a Summary source must be the article text (a string)",
                             path=path, line=line, field="source_info")
        return Source(source_id, task_type, check_text(info, path=path, line=line, field="source_info"), None)
    if not isinstance(info, dict):
        raise InputError("a Data2txt source must be the business JSON object", path=path, line=line,
                         field="source_info")
    context = check_unicode(record_context(info), path=path, line=line, field="source_info")
    return Source(source_id, task_type, context, None)


def read_sources(path: str | Path) -> dict[str, Source]:
    """Read ``source_info.jsonl`` into ``{source_id: Source}``; a repeated ``source_id`` is an error."""
    path = Path(path)
    sources: dict[str, Source] = {}
    for line, obj in iter_jsonl(path):
        source = _source_from_json(obj, path, line)
        if source.source_id in sources:
            raise InputError(f"duplicate source_id {source.source_id!r}", path=path, line=line, field="source_id")
        sources[source.source_id] = source
    return sources


# --- labels --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LabelCheck:
    """Outcome of checking one label against its response.

    ``status`` is ``"exact"``, ``"repaired"`` or ``"unrepairable"``; ``start``/``end``/``text`` are the
    checked span (for unrepairable labels, the given values); ``reason`` explains unrepairable labels.
    """

    status: str
    start: int
    end: int
    text: str
    reason: str = ""


def _occurrences_near(response: str, text: str, start: int, window: int) -> list[int]:
    """Starts of every (possibly overlapping) occurrence of ``text`` within ``window`` chars of ``start``."""
    lo = max(0, start - window)
    hi = min(len(response), start + window + len(text))  # an occurrence starting at start+window must fit
    found = []
    pos = response.find(text, lo, hi)
    while pos != -1:
        if abs(pos - start) <= window:
            found.append(pos)
        pos = response.find(text, pos + 1, hi)
    return found


def check_label(response: str, start: int, end: int, text: str, *, window: int = REPAIR_WINDOW) -> LabelCheck:
    """Check ``response[start:end] == text``; otherwise try the unambiguous nearby repair (module docstring)."""
    if text == "":
        return LabelCheck("unrepairable", start, end, text, "empty label text")
    if 0 <= start <= end <= len(response) and response[start:end] == text:
        return LabelCheck("exact", start, end, text)
    candidates = [text]
    if text.strip() and text.strip() != text:
        candidates.append(text.strip())
    for candidate in candidates:
        found = _occurrences_near(response, candidate, start, window)
        if len(found) == 1:
            return LabelCheck("repaired", found[0], found[0] + len(candidate), candidate)
        if len(found) > 1:
            return LabelCheck("unrepairable", start, end, text,
                              f"ambiguous: {len(found)} occurrences within {window} characters of start")
    return LabelCheck("unrepairable", start, end, text, f"text not found within {window} characters of start")


@dataclass
class LabelReport:
    """What happened to the labels of ``response.jsonl``; the list entries name the response ``id``.

    Accounting: ``labels == exact + len(repaired) + len(unrepairable)`` and
    ``spans == exact + len(repaired) - len(duplicates)``.
    """

    labels: int = 0
    exact: int = 0
    spans: int = 0
    repaired: list[dict[str, Any]] = field(default_factory=list)
    unrepairable: list[dict[str, Any]] = field(default_factory=list)
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    overlaps: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "input": self.labels,
            "exact": self.exact,
            "repaired": len(self.repaired),
            "unrepairable": len(self.unrepairable),
            "duplicates_removed": len(self.duplicates),
            "spans": self.spans,
            "overlapping_pairs": len(self.overlaps),
            "responses_with_overlaps": len({o["id"] for o in self.overlaps}),
            "repaired_labels": self.repaired,
            "unrepairable_labels": self.unrepairable,
            "duplicate_labels": self.duplicates,
            "overlapping_labels": self.overlaps,
        }


def _int_offset(value: Any, path: Path, line: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be an integer, got {value!r}", path=path, line=line, field=name)
    return value


def _convert_labels(obj: dict[str, Any], response: str, rid: str, path: Path, line: int,
                    report: LabelReport) -> list[Span]:
    labels = obj["labels"]
    if not isinstance(labels, list):
        raise InputError("must be a list", path=path, line=line, field="labels")
    spans: list[Span] = []
    seen: set[tuple[int, int, str]] = set()
    for i, label in enumerate(labels):
        where = f"labels[{i}]"
        if not isinstance(label, dict):
            raise InputError("must be an object", path=path, line=line, field=where)
        for key in _LABEL_FIELDS:
            _require(label, key, path, line, f"{where}.")
        start = _int_offset(label["start"], path, line, f"{where}.start")
        end = _int_offset(label["end"], path, line, f"{where}.end")
        text = check_text(label["text"], path=path, line=line, field=f"{where}.text")
        label_type = label["label_type"]
        check_choice(label_type, HALLUCINATION_TYPES, "label type", path=path, line=line, field=f"{where}.label_type")
        flags = {}
        for key in ("implicit_true", "due_to_null"):
            flags[key] = check_bool(label.get(key), path=path, line=line, field=f"{where}.{key}")

        report.labels += 1
        check = check_label(response, start, end, text)
        entry = {"id": rid, "label_index": i, "start": start, "end": end, "text": text, "type": label_type}
        if check.status == "unrepairable":
            if not 0 <= start <= end <= len(response):
                bad = "start" if not 0 <= start <= len(response) else "end"
                raise InputError(f"offsets [{start}, {end}) are out of range for a response of {len(response)} "
                                 f"characters and the label text is not found nearby ({check.reason})",
                                 path=path, line=line, field=f"{where}.{bad}")
            report.unrepairable.append(entry | {"reason": check.reason})
            continue
        if check.status == "repaired":
            report.repaired.append(entry | {"new_start": check.start, "new_end": check.end, "new_text": check.text})
        else:
            report.exact += 1
        key = (check.start, check.end, label_type)
        if key in seen:
            report.duplicates.append({"id": rid, "label_index": i, "start": check.start, "end": check.end,
                                      "type": label_type})
            continue
        seen.add(key)
        spans.append(Span(start=check.start, end=check.end, type=label_type, text=check.text, **flags))
    spans.sort()
    report.spans += len(spans)
    for a_index, a in enumerate(spans):
        for b in spans[a_index + 1:]:
            if b.start >= a.end:
                break
            report.overlaps.append({"id": rid, "a": [a.start, a.end, a.type], "b": [b.start, b.end, b.type]})
    return spans


# --- responses -----------------------------------------------------------------------------------------------

def _record_from_json(obj: dict[str, Any], sources: dict[str, Source], path: Path, line: int,
                      report: LabelReport) -> Record:
    for key in _RESPONSE_FIELDS:
        _require(obj, key, path, line)
    rid = _as_id(obj["id"], path, line, "id")
    source_id = _as_id(obj["source_id"], path, line, "source_id")
    if source_id not in sources:
        raise InputError(f"source_id {source_id!r} has no source in {SOURCE_FILE}", path=path, line=line,
                         field="source_id")
    split = obj["split"]
    check_choice(split, RAGTRUTH_SPLITS, "split", path=path, line=line, field="split")
    for key in ("model", "quality", "response"):
        check_text(obj[key], path=path, line=line, field=key, nonempty=key == "response")
    response = obj["response"]
    source = sources[source_id]
    spans = _convert_labels(obj, response, rid, path, line, report)
    return Record(id=rid, source_id=source_id, task_type=source.task_type, model=obj["model"], split=split,
                  quality=obj["quality"], response=response, context=source.context, question=source.question,
                  spans=spans)


def convert_ragtruth(ragtruth_dir: str | Path) -> tuple[list[Record], LabelReport]:
    """Every response of a RAGTruth directory as a Record (file order, no filtering) and the label report.

    Raises :class:`InputError` on malformed input (bad JSON, missing field, unknown task or label type,
    a ``source_id`` with no source, a repeated ``id``, out-of-range offsets that cannot be repaired).
    """
    response_path, source_path = resolve_files(ragtruth_dir)
    sources = read_sources(source_path)
    report = LabelReport()
    records: list[Record] = []
    seen_ids: set[str] = set()
    for line, obj in iter_jsonl(response_path):
        record = _record_from_json(obj, sources, response_path, line, report)
        if record.id in seen_ids:
            raise InputError(f"duplicate response id {record.id!r}", path=response_path, line=line, field="id")
        seen_ids.add(record.id)
        records.append(record)
    return records, report


def normalize_quality(keep_quality: Sequence[str] | str | None) -> tuple[str, ...] | None:
    """``None`` (keep all) or a tuple of quality values; ``"all"`` anywhere means keep all; commas split."""
    if keep_quality is None:
        return None
    values = [keep_quality] if isinstance(keep_quality, str) else list(keep_quality)
    out: list[str] = []
    for value in values:
        out.extend(part.strip() for part in str(value).split(",") if part.strip())
    if not out:
        raise InputError("no quality value given", field="keep_quality")
    if "all" in out:
        return None
    return tuple(dict.fromkeys(out))


def load_ragtruth(ragtruth_dir: str | Path, *, split: str | None = None,
                  keep_quality: Sequence[str] | None = ("good",)) -> list[Record]:
    """Records of a RAGTruth directory, with RAGTruth's own split (``train``/``test``) in ``Record.split``.

    ``split`` keeps one split; ``keep_quality`` keeps responses whose ``quality`` is listed (``None`` or
    ``"all"`` keeps every response). Labels are checked and repaired as described in the module docstring;
    :func:`load_ragtruth_with_report` also says what the filters and the label checks did.

    >>> from ragtruth_spans import load_ragtruth, sample_data_dir
    >>> records = load_ragtruth(sample_data_dir(), split="test")
    >>> len(records), sorted({r.task_type for r in records})
    (22, ['Data2txt', 'QA', 'Summary'])
    >>> all(r.response[s.start:s.end] == s.text for r in records for s in r.spans)
    True
    """
    return load_ragtruth_with_report(ragtruth_dir, split=split, keep_quality=keep_quality)[0]


def load_ragtruth_with_report(ragtruth_dir: str | Path, *, split: str | None = None,
                              keep_quality: Sequence[str] | None = ("good",)
                              ) -> tuple[list[Record], dict[str, Any]]:
    """:func:`load_ragtruth` and a description: the responses of the split, those dropped by the quality filter,
    and the labels of the kept responses that the conversion repaired, dropped as unrepairable or removed as
    duplicates."""
    if split is not None:
        check_choice(split, RAGTRUTH_SPLITS, "split", field="split")
    quality = normalize_quality(keep_quality)
    converted, labels = convert_ragtruth(ragtruth_dir)
    in_split = [r for r in converted if split is None or r.split == split]
    records = [r for r in in_split if quality is None or r.quality in quality]
    kept = {r.id for r in records}
    info = {"path": str(ragtruth_dir), "format": "RAGTruth directory", "split": split,
            "keep_quality": list(quality) if quality is not None else "all",
            "split_responses": len(in_split), "dropped_by_quality": len(in_split) - len(records),
            "labels_repaired": sum(e["id"] in kept for e in labels.repaired),
            "labels_unrepairable_dropped": sum(e["id"] in kept for e in labels.unrepairable),
            "labels_duplicates_removed": sum(e["id"] in kept for e in labels.duplicates)}
    return records, info
