"""The verdict on one span's claim, from the context's index and the relevance of each unit to the claim.

Rules, in order (the first that applies decides):

1. **contradicted**, Data2txt field: the span names a field (all the specific words of its key) whose value is
   ``false`` / ``"no"`` / ``"none"`` while the claim does not negate it, or ``true`` while the claim negates it.
2. **contradicted**, a different fact: a number, time of day, month or weekday of the span that the context never
   states, while a relevant passage (relevance ≥ ``conflict_relevance``) states another of the same kind; with
   ``name_conflicts``, the same for names.
3. **contradicted**, negation: the most relevant passage (relevance ≥ ``negation_relevance``) and the claim
   disagree on negation (one negates, the other does not).
4. **unsupported**: the span names a Data2txt field whose value is ``null``; or the context never states a fact
   of the span; or the context holds less than ``unsupported_coverage`` of the span's content words
   (idf-weighted); or, with an encoder, no passage is closer than ``unsupported_similarity`` (cosine).
5. **uncertain** otherwise: the context has the span's words and facts and no contradiction was found.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragtruth_spans.core.evidence import Passage, SpanEvidence
from ragtruth_spans.data.facts import WORD, Fact, content_stems, facts, negations, stem
from ragtruth_spans.data.hours import claimed_days
from ragtruth_spans.evidence.hours_conflicts import hours_conflicts
from ragtruth_spans.evidence.index import ContextIndex, key_stems
from ragtruth_spans.evidence.units import Unit

FALSE_VALUES = (False, "no", "none", "False", "u'no'", "'no'", "u'none'", "'none'")
TRUE_VALUES = (True, "yes", "free", "True", "u'free'", "'free'", "u'yes'", "'yes'")
CHECKED_KINDS = ("num", "time", "month", "weekday")
_CLAUSE = re.compile(r"[,;:()]|\b(?:but|while|although|however|whereas)\b", re.IGNORECASE)


@dataclass(frozen=True)
class VerdictSettings:
    """The thresholds of the rules (see the module docstring). The defaults are the lexical mode's, tuned by
    ``scripts/bench_evidence.py --tune`` on the RAGTruth pool's train split (never on test): docs/EVIDENCE.md."""

    top_k: int = 3
    conflict_k: int = 5
    conflict_relevance: float = 0.2
    negation_relevance: float = 0.4
    unsupported_coverage: float = 0.7
    unsupported_similarity: float = 0.0
    name_conflicts: bool = False


@dataclass(frozen=True)
class Claim:
    """One span's claim: the span ``[start, end)`` and the sentence(s) around it, characters of the response."""

    response: str
    start: int
    end: int
    sentence_start: int
    sentence_end: int

    @property
    def span_text(self) -> str:
        return self.response[self.start:self.end]

    @property
    def sentence(self) -> str:
        return self.response[self.sentence_start:self.sentence_end]

    def text(self) -> str:
        """What is compared with the passages: the sentence, then the span again."""
        return f"{self.sentence} {self.span_text}" if self.span_text.strip() else self.sentence

    def weights(self) -> dict[str, float]:
        """``{stem: weight}``: the sentence's content stems weigh 1, the span's 2 more."""
        out = {s: 1.0 for s in content_stems(self.sentence)}
        for s in content_stems(self.span_text):
            out[s] = out.get(s, 0.0) + 2.0
        return out

    def window(self, words: int = 4) -> str:
        """The span with up to ``words`` words of its sentence on each side (what a number is about: ``4.5`` →
        ``rates 4.5 stars and``)."""
        before = self.response[self.sentence_start:self.start]
        after = self.response[self.end:self.sentence_end]
        left = re.search(rf"(?:\S+\s+){{0,{words}}}$", before)
        right = re.match(rf"(?:\s*\S+){{0,{words}}}", after)
        return (left.group() if left else "") + self.span_text + (right.group() if right else "")

    def negated_at(self, stems: set[str]) -> bool:
        """Whether the clause of the span's sentence that holds the first word with one of ``stems`` negates
        (clauses end at commas, semicolons, brackets, "but", "while", "although", "however")."""
        sentence = self.sentence
        offset = self.start - self.sentence_start
        hits = [m.start() for m in WORD.finditer(sentence) if stem(m.group()) in stems and m.start() >= offset]
        at = hits[0] if hits else offset
        bounds = [0] + [m.end() for m in _CLAUSE.finditer(sentence)] + [len(sentence)]
        start = max(b for b in bounds if b <= at)
        end = min((b for b in bounds if b > at), default=len(sentence))
        return bool(negations(sentence[start:end]))


def _field_matches(index: ContextIndex, span_stems: set[str]) -> list[tuple[int, Unit, set[str]]]:
    """The scalar fields whose key's specific words (or those words joined) are all among ``span_stems``, with
    the stems that matched."""
    out = []
    for i, unit in enumerate(index.units):
        if not unit.is_field or not unit.keys or isinstance(unit.value, (dict, list)):
            continue
        own, joined = key_stems(unit.keys[-1])
        if own and own <= span_stems:
            out.append((i, unit, set(own)))
        elif joined in span_stems:
            out.append((i, unit, {joined}))
    return out


def _passages(index: ContextIndex, ranked: Sequence[int], scores: Sequence[float],
              conflicts: dict[int, list[tuple[int, int]]]) -> tuple[Passage, ...]:
    return tuple(Passage(index.units[i].start, index.units[i].end, float(scores[i]),
                         tuple(sorted(set(conflicts.get(i, []))))) for i in ranked)


def _field_rule(index: ContextIndex, claim: Claim) -> tuple[tuple[int, Unit] | None, tuple[int, Unit] | None]:
    """``(a field the claim contradicts, a null field the claim names)``, each None when there is none."""
    null_match = None
    for i, unit, matched in _field_matches(index, {stem(w) for w in WORD.findall(claim.span_text)}):
        value = unit.value
        negated = claim.negated_at(matched)
        if (value in FALSE_VALUES and not negated) or (value in TRUE_VALUES and negated):
            return (i, unit), None
        if value is None and null_match is None:
            null_match = (i, unit)
    return None, null_match


def _field_evidence(index: ContextIndex, verdict: str, match: tuple[int, Unit], ranked: list[int],
                    scores: Sequence[float], top_k: int) -> SpanEvidence:
    i, unit = match
    ranked = [i] + [j for j in ranked if j != i][:top_k - 1]
    shown = _quote(index.context[unit.start:unit.end])
    reason = f"the data says {shown}" if verdict == "contradicted" else f"the data leaves it empty: {shown}"
    return SpanEvidence(verdict, _passages(index, ranked, scores, {i: [unit.value_span or (unit.start, unit.end)]}),
                        reason)


def _absent_words(text: str, index: ContextIndex) -> list[str]:
    """The words of ``text`` whose stems the context does not have, in order, without repeats."""
    out: list[str] = []
    for m in WORD.finditer(text):
        stems = content_stems(m.group())
        if stems and stems[0] not in index.stems and m.group() not in out:
            out.append(m.group())
    return out


def _fact_conflicts(index: ContextIndex, claim: Claim, ranked: Sequence[int], scores: Sequence[float],
                    settings: VerdictSettings) -> tuple[list[Fact], dict[int, list[Fact]]]:
    """The span's facts the context never states, and per relevant passage its facts of the same kinds that
    the claim does not state."""
    kinds = CHECKED_KINDS + (("name",) if settings.name_conflicts else ())
    missing = [f for f in facts(claim.span_text) if not index.has_fact(f)]
    claim_values = {(f.kind, f.value) for f in facts(claim.sentence)}
    alternatives: dict[int, list[Fact]] = {}
    missing_kinds = {f.kind for f in missing if f.kind in kinds}
    if not missing_kinds:
        return missing, {}
    span_scores = index.relevance({s: 1.0 for s in content_stems(claim.window())})
    by_span = sorted(range(len(span_scores)), key=lambda i: (-span_scores[i], i))[:settings.conflict_k]
    for i in dict.fromkeys(list(ranked) + by_span):
        if max(scores[i], span_scores[i]) < settings.conflict_relevance:
            continue
        others = [f for f in index.unit_facts[i] if f.kind in missing_kinds and (f.kind, f.value) not in claim_values]
        if others:
            alternatives[i] = others
    return missing, alternatives


def _is_year(fact: Fact) -> bool:
    return fact.kind == "num" and fact.value.isdigit() and 1000 <= int(fact.value) <= 2100


def _same_shape(alternatives: dict[int, list[Fact]], missing: list[Fact]) -> dict[int, list[Fact]]:
    """Keep the alternatives shaped like the missing facts (a year for a year, another number for a number) when
    there are such; the passages stay the same, only what is marked narrows."""
    years = {_is_year(f) for f in missing if f.kind == "num"}
    kept = {i: [f for f in fs if f.kind != "num" or _is_year(f) in years] for i, fs in alternatives.items()}
    return kept if any(kept.values()) else alternatives


def _hours_rule(index: ContextIndex, claim: Claim) -> tuple[list[int], str] | None:
    """Opening days or hours of the span that the data's ``hours`` contradict (:mod:`.hours`)."""
    span_facts = [f for f in facts(claim.span_text) if f.kind in ("time", "weekday")]
    if not span_facts and claimed_days(claim.span_text) is None:
        return None
    span_times = sum(f.kind == "time" for f in span_facts)
    text = claim.span_text if span_times >= 2 or claimed_days(claim.span_text) else claim.sentence
    return hours_conflicts(index, text)


def _without_stated_facts(index: ContextIndex, text: str) -> str:
    """``text`` with the facts the context states blanked out (``2 pm`` is covered by a ``14:0`` of the data)."""
    chars = list(text)
    for fact in facts(text):
        if index.has_fact(fact):
            chars[fact.start:fact.end] = " " * (fact.end - fact.start)
    return "".join(chars)


def _quote(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def decide(index: ContextIndex, claim: Claim, scores: Sequence[float], settings: VerdictSettings,
           similarity: float | None = None) -> SpanEvidence:
    """The :class:`SpanEvidence` of one claim (see the module docstring); ``scores``: each unit's relevance,
    ``similarity``: the best cosine of a passage (encoder mode) or None."""
    ranked = [i for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:settings.top_k] if scores[i] > 0]
    context = index.context
    contradicting_field, null_field = _field_rule(index, claim)
    if contradicting_field is not None:
        return _field_evidence(index, "contradicted", contradicting_field, ranked, scores, settings.top_k)
    hours = _hours_rule(index, claim)
    if hours is not None:
        units, reason = hours
        ranked = list(dict.fromkeys(units[:settings.top_k] + ranked))[:max(settings.top_k, len(units[:settings.top_k]))]
        spans = {i: [index.units[i].value_span or (index.units[i].start, index.units[i].end)] for i in units}
        return SpanEvidence("contradicted", _passages(index, ranked, scores, spans), reason)
    missing, alternatives = _fact_conflicts(index, claim, ranked, scores, settings)
    if alternatives:
        ranked = list(dict.fromkeys(ranked + sorted(alternatives, key=lambda i: -scores[i])))[:settings.top_k + 1]
        alternatives = _same_shape(alternatives, missing)
        conflicts = {i: [(f.start, f.end) for f in fs] for i, fs in alternatives.items() if i in ranked}
        said = sorted({_quote(context[f.start:f.end], 30) for fs in alternatives.values() for f in fs})[:4]
        gone = sorted({_quote(claim.span_text[f.start:f.end], 30) for f in missing})[:3]
        return SpanEvidence("contradicted", _passages(index, ranked, scores, conflicts),
                            f"the context has {', '.join(said)}, not {', '.join(gone)}")
    if ranked and scores[ranked[0]] >= settings.negation_relevance and not index.units[ranked[0]].is_field:
        best = index.units[ranked[0]]
        passage_neg = negations(context[best.start:best.end])
        if bool(passage_neg) != bool(negations(claim.sentence)):
            conflicts = {ranked[0]: [(best.start + a, best.start + b) for a, b in passage_neg]}
            side = "negates it" if passage_neg else "states it without the negation"
            return SpanEvidence("contradicted", _passages(index, ranked, scores, conflicts),
                                f"the closest passage {side}")
    if null_field is not None:
        return _field_evidence(index, "unsupported", null_field, ranked, scores, settings.top_k)
    passages = _passages(index, ranked, scores, {})
    if missing:
        gone = sorted({_quote(claim.span_text[f.start:f.end], 30) for f in missing})[:4]
        return SpanEvidence("unsupported", passages, f"the context never states {', '.join(gone)}")
    span_stems = content_stems(_without_stated_facts(index, claim.span_text))
    coverage = index.coverage(span_stems)
    if coverage < settings.unsupported_coverage:
        absent = _absent_words(claim.span_text, index)[:4]
        return SpanEvidence("unsupported", passages, f"the context has {coverage:.0%} of the span's words (not: "
                                                     f"{', '.join(absent)})")
    if similarity is not None and similarity < settings.unsupported_similarity:
        return SpanEvidence("unsupported", passages, f"no passage is close to the claim (cosine {similarity:.2f})")
    return SpanEvidence("uncertain", passages, f"the context has the span's words ({coverage:.0%}) and no "
                                               "contradicting fact was found")
