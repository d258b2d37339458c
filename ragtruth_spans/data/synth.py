"""Generated data over many kinds of text: faithful answers (copied, compressed, paraphrased) and typed,
offset-exact hallucinations (:mod:`.augment`'s edits), built from any contexts — RAGTruth's, news articles,
long-form evidence, JSON records.

Each generated record takes one **document** (a context, its task, its question), cuts a **context window** of
it (a short one of 1–3 sentences, a medium one of 4–10, or the whole document), writes a **faithful answer**
(1–3 sentences of the window, or of a real clean answer of the document when there is one, in order), transforms
it faithfully (:data:`FAITHFUL_KINDS`: synonyms, number formats, ``not un-X``, compression, reordering), and then,
for a share of the records, applies one edit of :data:`~.augment.ALL_KINDS`, whose inserted or changed text is the
only gold span (``response[start:end] == span.text``, half-open, characters). Records keep their document's
``source_id`` (source-disjoint folds stay disjoint) and get the id
``<source_id>#aug-syn-<seed>-<i>-<kind>~<faithful transforms>``, so they count as augmented data. Everything
is drawn from one ``random.Random(seed)``: the same documents and seed give the same records. Counts of what
was made and skipped are returned.

>>> docs = [Document("d1", "Summary", "The bridge opened in 1932. It carries 40,000 cars a day.", None, "demo"),
...         Document("d2", "Summary", "Maria Lopez chairs the board. The firm sells tea.", None, "demo")]
>>> records, stats = generate(docs, 6, seed=0)
>>> all(r.response[s.start:s.end] == s.text for r in records for s in r.spans)
True
"""

from __future__ import annotations

import functools
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ragtruth_spans.core.types import Record
from ragtruth_spans.data import lexicon
from ragtruth_spans.data.augment import ALL_KINDS, AUGMENTED_ID, EDITS, DonorPool
from ragtruth_spans.data.facts import content_stems

FAITHFUL_KINDS: tuple[str, ...] = ("copy", "paraphrase", "number-format", "negated-negative", "compress",
                                   "reorder", "aligned")
_BREAK = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_WORD = re.compile(r"(?<![\w-])[A-Za-z]+(?![\w-])")
_BIG_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3})((?:,\d{3})+)(?![\w.,]*\d)")
_SMALL_NUMBER = re.compile(r"(?<![\w.,$£€-])([2-9])(?![\w.,:%-])")
_CLAUSE_CUT = re.compile(r",\s+(?:which|who|where|while|although|according to)\b[^,.;]*(?=[,.;])")
_NEGATABLE = {"common": "uncommon", "likely": "unlikely", "possible": "impossible", "usual": "unusual",
              "known": "unknown", "clear": "unclear", "popular": "unpopular", "important": "unimportant"}
_NUMBER_NAMES = {v: k for k, v in lexicon.NUMBER_WORDS.items() if 2 <= v <= 9}
_MAX_CONTEXT = 8000
_MAX_ALIGNED = 6
"""An aligned answer's window holds at most this many context sentences before its padding."""


@dataclass(frozen=True)
class Document:
    """One context to generate from: ``source_id``, ``task``, ``context``, ``question`` (or None), ``origin``
    (the data set it came from), and the clean answers the data set already holds for it."""

    source_id: str
    task: str
    context: str
    question: str | None
    origin: str
    answers: tuple[str, ...] = ()


@dataclass
class SynthStats:
    """Records made per edit kind (``faithful`` for unedited ones), faithful transforms used, edits skipped."""

    made: Counter = field(default_factory=Counter)
    faithful: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {"made": dict(self.made), "faithful": dict(self.faithful), "skipped": dict(self.skipped)}


GENERATED_ID = f"{AUGMENTED_ID}syn-"
"""What a generated record's id carries (``<source_id>#aug-syn-<seed>-<n>-<kind>~<transforms>``)."""


def is_generated(record: Record) -> bool:
    """Whether ``record`` was made by :func:`generate` (a generated record is also an augmented one).

    >>> is_generated(Record("s#aug-syn-0-3-faithful~copy", "s", "QA", "synthetic", "train", "good", "a", "c"))
    True
    """
    return GENERATED_ID in record.id


def documents(records: Sequence[Record], origin: str) -> list[Document]:
    """One :class:`Document` per distinct ``source_id`` of ``records`` (in first-seen order), with the responses
    of that source that have no gold span as its clean answers."""
    by_source: dict[str, list[Record]] = {}
    for record in records:
        by_source.setdefault(record.source_id, []).append(record)
    return [Document(sid, group[0].task_type, group[0].context, group[0].question, origin,
                     tuple(r.response for r in group if not r.spans)) for sid, group in by_source.items()]


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (a fast rule: cut after ``.``/``!``/``?`` and a space, and at line breaks),
    stripped; a piece that does not end a sentence is left out."""
    return list(_sentences(text))


@functools.lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(s for piece in _BREAK.split(text) if (s := piece.strip()) and s[-1] in ".!?\"')]")


def _window(doc: Document, rng: random.Random) -> str:
    """A context window of ``doc``: its whole text (JSON always), or 1–3 / 4–10 consecutive sentences."""
    parts = sentences(doc.context)
    shape = rng.random()
    if doc.context.lstrip().startswith("{") or len(parts) < 4 or shape < 0.3:
        return doc.context[:_MAX_CONTEXT]
    size = rng.randint(1, 3) if shape < 0.65 else rng.randint(4, 10)
    at = rng.randrange(0, max(1, len(parts) - size + 1))
    return " ".join(parts[at:at + size])


def _answer_sentences(doc: Document, window: str, rng: random.Random) -> list[str] | None:
    """1–3 sentences, in order, of the window (copied) or of a clean answer of the document (whole-context
    windows only)."""
    is_json = doc.context.lstrip().startswith("{")
    if is_json and not doc.answers:
        return None
    if window == doc.context[:_MAX_CONTEXT] and doc.answers and (is_json or rng.random() < 0.5):
        answer = sentences(rng.choice(doc.answers))
        if answer and rng.random() < 0.5:
            return answer
        pool = answer
    else:
        pool = [s for s in sentences(window) if 5 <= len(s.split()) <= 60]
    if not pool:
        return None
    k = min(len(pool), rng.choice([1, 1, 2, 3]))
    at = rng.randrange(0, len(pool) - k + 1)
    return pool[at:at + k]


def aligned_answer(doc: Document, rng: random.Random) -> tuple[str, str] | None:
    """``(window, sentence)``: a sentence of one of ``doc``'s clean answers — a real paraphrase, in words the
    context may not hold — and the shortest run of context sentences holding every content stem of it that the
    whole context holds (at most :data:`_MAX_ALIGNED`, then 0–2 more either side), so the short window supports
    the sentence as the whole context did; None when there is no such answer or run (JSON records: never).

    >>> doc = Document("d", "Summary", "The bridge opened in 1932. Rain fell. It carries 40,000 cars a day. "
    ...                "Tolls rose. The mayor spoke.", None, "demo", ("Since 1932 the bridge has taken 40,000 "
    ...                "vehicles a day.",))
    >>> window, answer = aligned_answer(doc, random.Random(0))
    >>> "1932" in window and "40,000" in window, answer
    (True, 'Since 1932 the bridge has taken 40,000 vehicles a day.')
    """
    parts = sentences(doc.context)
    candidates = [s for answer in doc.answers for s in sentences(answer) if 5 <= len(s.split()) <= 60]
    if doc.context.lstrip().startswith("{") or len(parts) < 4 or not candidates:
        return None
    answer = rng.choice(candidates)
    held = _sentence_stems(doc.context)
    need = set(content_stems(answer)) & set().union(*held)
    if len(need) < 3:
        return None
    best: tuple[int, int] | None = None
    for i in range(len(parts)):
        have: set[str] = set()
        for j in range(i, min(len(parts), i + _MAX_ALIGNED)):
            have |= held[j]
            if need <= have:
                best = (i, j) if best is None or j - i < best[1] - best[0] else best
                break
    if best is None:
        return None
    start, end = max(0, best[0] - rng.randint(0, 2)), min(len(parts), best[1] + 1 + rng.randint(0, 2))
    return " ".join(parts[start:end]), answer


@functools.lru_cache(maxsize=256)
def _sentence_stems(context: str) -> tuple[frozenset[str], ...]:
    """The content stems of each sentence of ``context`` (:func:`sentences`), read once per context."""
    return tuple(frozenset(content_stems(p)) for p in sentences(context))


def _paraphrase(text: str, rng: random.Random) -> str | None:
    found = [m for m in _WORD.finditer(text) if m.group() in lexicon.SYNONYMS]  # lower-case words: no names
    if not found:
        return None
    for m in sorted(rng.sample(found, min(len(found), rng.randint(1, 3))), key=lambda m: -m.start()):
        new = rng.choice(sorted(lexicon.SYNONYMS[m.group()]))
        text = text[:m.start()] + new + text[m.end():]
    return text


def _number_format(text: str, rng: random.Random) -> str | None:
    big = list(_BIG_NUMBER.finditer(text))
    if big:
        m = rng.choice(big)
        groups = m.group(2).count(",")
        scale = {1: "thousand", 2: "million", 3: "billion"}.get(groups)
        digits = (m.group(1) + m.group(2)).replace(",", "")
        lead = digits[: len(m.group(1))]
        rest = digits[len(m.group(1)):].rstrip("0")[:2]
        if scale is None:
            return None
        value = lead + (f".{rest}" if rest else "")
        return text[:m.start()] + f"{value} {scale}" + text[m.end():]
    if "%" in text and rng.random() < 0.5:
        return text.replace("%", " percent", 1)
    small = list(_SMALL_NUMBER.finditer(text))
    if not small:
        return text.replace(" percent", "%", 1) if " percent" in text else None
    m = rng.choice(small)
    return text[:m.start()] + _NUMBER_NAMES[int(m.group(1))] + text[m.end():]


def _negated_negative(text: str, rng: random.Random) -> str | None:
    found = [m for m in _WORD.finditer(text) if m.group().lower() in _NEGATABLE
             and re.search(r"\b(is|are|was|were|be|seems?)\s+$", text[:m.start()])]
    if not found:
        return None
    m = rng.choice(found)
    return text[:m.start()] + "not " + _NEGATABLE[m.group().lower()] + text[m.end():]


def _compress(text: str, rng: random.Random) -> str | None:
    cuts = list(_CLAUSE_CUT.finditer(text))
    if not cuts:
        return None
    m = rng.choice(cuts)
    out = text[:m.start()] + text[m.end():]
    return out if len(out.split()) >= 5 else None


def faithful_answer(doc: Document, rng: random.Random, aligned_share: float = 0.0
                    ) -> tuple[str, str, list[str]] | None:
    """``(context window, answer, faithful transforms applied)`` for ``doc``, or None when it has nothing to
    copy; with probability ``aligned_share`` the answer is a clean answer's sentence in a window cut to support it
    (:func:`aligned_answer`, transform ``aligned``) where the document has one."""
    aligned = aligned_answer(doc, rng) if aligned_share and rng.random() < aligned_share else None
    if aligned is not None:
        return aligned[0], aligned[1], ["aligned"]
    window = _window(doc, rng)
    parts = _answer_sentences(doc, window, rng)
    if not parts:
        return None
    applied = []
    if len(parts) > 1 and rng.random() < 0.2:
        parts = parts[1:] + parts[:1]
        applied.append("reorder")
    text = " ".join(parts)
    for name, transform, chance in (("paraphrase", _paraphrase, 0.5), ("number-format", _number_format, 0.35),
                                    ("negated-negative", _negated_negative, 0.5), ("compress", _compress, 0.3)):
        if rng.random() < chance and (new := transform(text, rng)) is not None and new != text:
            text = new
            applied.append(name)
    return window, text, applied or ["copy"]


def generate(docs: Sequence[Document], n: int, *, seed: int = 0, kinds: Sequence[str] = ALL_KINDS,
             edited_share: float = 0.6, split: str = "train", tries: int = 8, aligned_share: float = 0.0
             ) -> tuple[list[Record], SynthStats]:
    """``n`` generated records from ``docs`` (module docstring). Each record first draws its kind — ``faithful``
    with probability ``1 - edited_share``, else one of ``kinds`` uniformly, so rare edits are as frequent as
    common ones — then up to ``tries`` documents and answers until the edit applies (JSON kinds draw JSON
    documents only); a kind that never applies is counted in ``skipped`` and the record stays faithful.
    ``aligned_share``: the share of answers drawn by :func:`aligned_answer` (real paraphrases in short windows)."""
    rng = random.Random(seed)
    stats = SynthStats()
    donors = DonorPool([Record(d.source_id, d.source_id, d.task, "synthetic", split, "good", (d.answers or ("",))[0],
                               d.context, d.question) for d in docs])  # another source's answer: the clause's donor
    json_docs = [i for i, d in enumerate(docs) if d.context.lstrip().startswith("{")]
    out: list[Record] = []
    while len(out) < n:
        kind = rng.choice(list(kinds)) if rng.random() < edited_share else "faithful"
        made = _one(docs, json_docs if kind.startswith("json") and json_docs else None, kind, donors, rng, tries,
                    f"{GENERATED_ID}{seed}-{len(out)}", split, aligned_share)
        if made is None:
            stats.skipped[kind] += 1
            made = _one(docs, None, "faithful", donors, rng, tries, f"{GENERATED_ID}{seed}-{len(out)}", split,
                        aligned_share)
            if made is None:
                raise ValueError("no document has a sentence to copy")
        record, kind, applied = made
        stats.made[kind] += 1
        stats.faithful.update(applied)
        out.append(record)
    return out, stats


def _one(docs: Sequence[Document], among: Sequence[int] | None, kind: str, donors: Sequence[Record],
         rng: random.Random, tries: int, suffix: str, split: str, aligned_share: float = 0.0
         ) -> tuple[Record, str, list[str]] | None:
    """One record of ``kind`` (``faithful``: no edit) from a document drawn from ``among`` (default: all), or
    None after ``tries`` documents."""
    for _ in range(tries):
        doc = docs[rng.choice(among) if among else rng.randrange(len(docs))]
        made = faithful_answer(doc, rng, aligned_share)
        if made is None:
            continue
        window, answer, applied = made
        base = Record(f"{doc.source_id}{suffix}", doc.source_id, doc.task, "synthetic", split, "good", answer,
                      window, doc.question)
        record = base if kind == "faithful" else EDITS[kind](base, rng, donors)
        if record is not None:
            return replace(record, id=f"{base.id}-{kind}~{'+'.join(applied)}"), kind, applied
    return None
