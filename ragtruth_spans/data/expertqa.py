"""``ragtruth-spans import expertqa``: ExpertQA (Malaviya et al., NAACL 2024; MIT) → prepared QA records.

Input folder: the ``*.jsonl`` files of ExpertQA's ``data/lfqa/`` (``{domain,rand}_{val,test}.jsonl``): one
question per line, ``answers`` by system, each answer with its ``answer_string`` and ``claims`` (``claim_string``,
the ``evidence`` it cites, and an expert's ``support`` judgement: Complete, Partial, Incomplete, Missing, N/A).

Records: one per (question, system) answer; question = the question, response = ``answer_string``, context = the
answer's cited evidence passages (distinct, in order of first citation, blank-line separated), task ``QA``,
model = the system, source = the question (``expertqa-<sha256>``), so answers to one question stay together.

Labels are claim-level, not character-level: a claim judged ``Missing`` (its evidence supports none of it) is an
``Evident Baseless Info`` span and ``Partial``/``Incomplete`` a ``Subtle Baseless Info`` span (set
``partial=False`` to leave those unmarked); ``Complete``, ``N/A`` and unjudged claims are not marked. A claim is
located in the answer by its text (exact, then with whitespace normalised, then by a fuzzy alignment of at least
:data:`MIN_FUZZY` (rapidfuzz); counted as repaired). Skipped and counted: an answer whose cited evidence is
shorter than ``min_context`` characters (default 200) once its citation marks and links are left out (a quarter
of the answers cite only the addresses of their sources: such a context holds no evidence to judge by; with
``keep_link_only`` they are kept, and counted in ``details["link_only_kept"]``), an empty answer, and an answer with
a marked claim that cannot be located (its label would be wrong).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.fields import check_text, is_blank
from ragtruth_spans.core.jsonl import iter_jsonl
from ragtruth_spans.core.types import Record, Span, canonical_spans
from ragtruth_spans.data.imported import ImportReport, stable_id

SUPPORT_TYPES = {"Missing": "Evident Baseless Info", "Partial": "Subtle Baseless Info",
                 "Incomplete": "Subtle Baseless Info"}
SUPPORT_VALUES = ("Complete", "Partial", "Incomplete", "Missing", "N/A")
"""The experts' support judgements; any other value is refused (null: not judged)."""
NOT_EVIDENCE = re.compile(r"\[\d+\]|https?://\S+|www\.\S+")
"""What a cited passage holds besides evidence: its citation marks (``[3]``) and links."""
MIN_FUZZY = 90.0
"""The least rapidfuzz alignment score (0–100) at which a claim that is not verbatim in its answer is located."""


def read_expertqa(folder: str | Path, *, min_context: int = 200, partial: bool = True,
                  keep_link_only: bool = False) -> tuple[list[Record], ImportReport]:
    """Every answer of the ``*.jsonl`` files of ``folder`` (sorted by name) as a record, and the report."""
    folder = Path(folder)
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files:
        raise InputError("no *.jsonl file here (ExpertQA's data/lfqa/ folder)", path=folder)
    report = ImportReport(importer="expertqa", input_path=str(folder), unit="answers")
    report.details = {"min_context": min_context, "partial_marked": partial, "keep_link_only": keep_link_only,
                      "link_only_kept": 0, "claims": {}, "files": {}}
    records: list[Record] = []
    seen: set[str] = set()
    for path in files:
        report.details["files"][path.name] = 0
        for line, obj in iter_jsonl(path):
            question = obj.get("question")
            answers = obj.get("answers")
            if not isinstance(question, str) or not isinstance(answers, dict):
                raise InputError("expected 'question' (a string) and 'answers' (an object by system)", path=path,
                                 line=line)
            for system, answer in sorted(answers.items()):
                report.input += 1
                report.details["files"][path.name] += 1
                record = _record(question, system, answer, path, line, report, partial, seen,
                                 min_context=min_context, keep_link_only=keep_link_only)
                if record is not None:
                    seen.add(record.id)
                    records.append(record)
    return records, report


def _record(question: str, system: str, answer: Any, path: Path, line: int, report: ImportReport,
            partial: bool, seen: set[str], *, min_context: int, keep_link_only: bool) -> Record | None:
    """One answer as a record, or None (the reason counted in ``report``); the settings of :func:`read_expertqa`."""
    claims = check_answer(answer, f"answers.{system}", path, line)
    response = answer["answer_string"]
    if is_blank(response):
        report.skip("empty answer")
        return None
    record_id = f"expertqa-{system}-{stable_id(question, response, length=12)}"
    if record_id in seen:  # the same answer judged again (another file or annotator): the first judgement is kept
        report.skip("duplicate (same question, system and answer)")
        return None
    passages: list[str] = []
    for claim in claims:
        for passage in claim.get("evidence") or []:
            if passage.strip() and passage.strip() not in passages:
                passages.append(passage.strip())
    context = "\n\n".join(passages)
    if len(NOT_EVIDENCE.sub("", context).strip()) < min_context:
        if not (keep_link_only and len(context) >= min_context):
            report.skip(f"cited evidence shorter than {min_context} characters"
                        + ("" if keep_link_only else " without citation marks and links"))
            return None
        report.details["link_only_kept"] += 1
    spans: list[Span] = []
    counts = report.details["claims"]
    for claim in claims:
        support = claim.get("support")
        counts[str(support)] = counts.get(str(support), 0) + 1
        kind = SUPPORT_TYPES.get(str(support))
        if kind is None or (not partial and kind.startswith("Subtle")):
            continue
        found = locate_claim(response, claim["claim_string"], report)
        if found is None:
            report.skip("a marked claim not found in its answer")
            return None
        spans.append(Span(found[0], found[1], kind, response[found[0]:found[1]]))
    return Record(id=record_id, source_id=f"expertqa-{stable_id(question)}",
                  task_type="QA", model=system, split="", quality="good", response=response, context=context,
                  question=question, spans=canonical_spans(spans))


def check_answer(answer: Any, where: str, path: Path, line: int) -> list[dict[str, Any]]:
    """The claims of one answer after checking every field ExpertQA gives them (:class:`InputError` naming file,
    line and field): the answer an object with an ``answer_string``; ``claims`` null or a list of objects, each with
    a ``claim_string`` string, ``evidence`` null or a list of strings and ``support`` null or one of
    :data:`SUPPORT_VALUES`."""
    if not isinstance(answer, dict):
        raise InputError("expected an object with an 'answer_string'", path=path, line=line, field=where)
    check_text(answer.get("answer_string"), field=f"{where}.answer_string", path=path, line=line)
    claims = answer.get("claims")
    if claims is None:
        return []
    if not isinstance(claims, list):
        raise InputError("must be a list of claims or null", path=path, line=line, field=f"{where}.claims")
    for i, claim in enumerate(claims):
        name = f"{where}.claims[{i}]"
        if not isinstance(claim, dict):
            raise InputError("a claim must be an object", path=path, line=line, field=name)
        check_text(claim.get("claim_string"), field=f"{name}.claim_string", path=path, line=line)
        evidence = claim.get("evidence")
        if evidence is not None and not isinstance(evidence, list):
            raise InputError("must be a list of passages or null", path=path, line=line, field=f"{name}.evidence")
        for j, passage in enumerate(evidence or []):
            check_text(passage, field=f"{name}.evidence[{j}]", path=path, line=line)
        if claim.get("support") is not None:
            check_choice(claim["support"], SUPPORT_VALUES, "support judgement", path=path, line=line,
                         field=f"{name}.support")
    return claims


def locate_claim(response: str, claim: str, report: ImportReport) -> tuple[int, int] | None:
    """``[a, b)`` of ``claim`` in ``response``: verbatim, else with whitespace normalised, else a rapidfuzz
    alignment scoring at least :data:`MIN_FUZZY` (the last two counted as repaired); None when not found."""
    claim = claim.strip()
    if not claim:
        return None
    at = response.find(claim)
    if at >= 0:
        return at, at + len(claim)
    pattern = r"\s+".join(re.escape(word) for word in claim.split())
    match = re.search(pattern, response)
    if match:
        report.repair("claim located with whitespace normalised")
        return match.start(), match.end()
    from importlib.util import find_spec

    if find_spec("rapidfuzz") is None:
        from ragtruth_spans.core.extras import MissingExtra

        raise MissingExtra("import expertqa aligns claims with rapidfuzz (not installed): pip install rapidfuzz, "
                           "or pip install 'ragtruth-spans[detect]'")
    from rapidfuzz import fuzz

    alignment = fuzz.partial_ratio_alignment(claim, response)
    if alignment is not None and alignment.score >= MIN_FUZZY and alignment.dest_end > alignment.dest_start:
        a, b = alignment.dest_start, alignment.dest_end
        while a < b and response[a].isspace():
            a += 1
        while b > a and response[b - 1].isspace():
            b -= 1
        if a == b:
            return None
        report.repair(f"claim located by fuzzy alignment (score >= {MIN_FUZZY:g})")
        return a, b
    return None
