"""The augmentation kinds for transfer beyond RAGTruth: the plain edits a user tries first, over any text.

Each edits one clean response like the five kinds of :mod:`.augment` (which applies them all, :data:`TRANSFER_KINDS`
in this order) and returns a record whose only gold span is the changed or inserted text:

==================  =======================  =========================================================
kind                RAGTruth type            edit
==================  =======================  =========================================================
date                Evident Conflict         a month, weekday or year of the context becomes another
unit                Evident Conflict         a unit after a number (``kilograms``) becomes another of
                                             its dimension (``pounds``)
quantity            Subtle Conflict          a quantity or frequency word (``most``, ``often``) becomes
                                             another of its class (``few``, ``rarely``)
antonym             Evident Conflict         a word becomes its antonym / the reversed finding
                                             (``support`` → ``oppose``)
comparison          Evident Conflict         a comparison or trend is reversed (``higher`` → ``lower``,
                                             ``rose`` → ``fell``)
name-new            Evident Conflict         a capitalised name becomes a name the context lacks
attribution         Evident Baseless Info    `` by <title> <name>`` / ``, according to <name>,`` added
figure              Evident Baseless Info    an unsupported figure (``, at a cost of $4 million``) added
recommendation      Evident Baseless Info    an unsupported recommendation sentence added
addition            Evident Baseless Info    ``, and <a clause of another document>`` added to a sentence
sentence            Evident Baseless Info    a sentence of another document's context is inserted
json-false          Evident Conflict         (JSON context) a sentence asserting a key whose value is
                                             false / null (``It offers bike parking.``)
json-invented       Evident Baseless Info    (JSON context) an amenity the record does not mention
==================  =======================  =========================================================
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Sequence

from ragtruth_spans.core.types import Record
from ragtruth_spans.data import lexicon
from ragtruth_spans.data.augment_edit import NAME, SENTENCE, edited, inserted

_WORD_RE = re.compile(r"(?<![\w-])[A-Za-z]+(?![\w-])")
_YEAR = re.compile(r"(?<![\w.,])(1[89]\d\d|20\d\d)(?![\w])")
_NUMBER_UNIT = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)*)\s?([A-Za-z]+)\b")
_UNIT_CLASSES = frozenset({"mass", "length", "volume", "time", "money", "temperature", "area"})
_COMPARISONS = frozenset({"higher", "lower", "more", "less", "larger", "smaller", "bigger", "better", "worse",
                          "faster", "slower", "older", "younger", "above", "below", "rose", "fell", "rise", "fall",
                          "rises", "falls", "rising", "falling", "increase", "decrease", "increased", "decreased",
                          "increases", "decreases", "increasing", "decreasing", "grew", "shrank", "before", "after",
                          "earlier", "later", "stronger", "weaker", "easier", "harder", "warmer", "colder",
                          "largest", "smallest", "best", "worst", "lowest", "highest", "oldest", "youngest"})
_PARTICIPLE = re.compile(r"\b(built|founded|designed|written|developed|created|discovered|organi[sz]ed|"
                         r"established|opened|launched|painted|composed|directed|published|introduced|"
                         r"conducted|led|funded|made|produced|invented|announced)\b")
_KEY_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_LOWER_STARTS = frozenset({"the", "a", "an", "it", "this", "that", "these", "those", "there", "he", "she", "they",
                           "we", "in", "on", "at", "for", "but", "as", "after", "before", "when", "while"})


def _cased(new: str, like: str) -> str:
    """``new`` with the first-letter case of ``like``."""
    return new[:1].upper() + new[1:] if like[:1].isupper() else new


def _word_swap(record: Record, rng: random.Random, kind: str, choices: Callable[[str], list[str]],
               pattern: re.Pattern[str] = _WORD_RE) -> Record | None:
    """A word of the response (matching ``pattern``) for which ``choices(lower-case word)`` offers replacements
    the context does not hold next to it becomes one of them."""
    found = [(m, options) for m in pattern.finditer(record.response)
             if (options := choices(m.group().lower()))]
    if not found:
        return None
    m, options = rng.choice(found)
    return edited(record, kind, m.start(), m.end(), _cased(rng.choice(options), m.group()))


def _class_choices(*classes: str) -> Callable[[str], list[str]]:
    def choices(word: str) -> list[str]:
        name = lexicon.contrast_class(word)
        if name not in classes:
            return []
        return [w for w in lexicon.contrasting(word) if " " not in w]
    return choices


def _date(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    if rng.random() < 0.5:
        years = [m for m in _YEAR.finditer(record.response)]
        if years:
            m = rng.choice(years)
            new = str(int(m.group()) + rng.choice([-12, -5, -3, -2, -1, 1, 2, 3, 5, 10]))
            return edited(record, "date", m.start(), m.end(), new)
    months = _class_choices("month", "weekday")
    return _word_swap(record, rng, "date", lambda w: [o.capitalize() for o in months(w)],
                      re.compile(r"(?<![\w-])[A-Z][a-z]+(?![\w-])"))


def _unit(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    found = [m for m in _NUMBER_UNIT.finditer(record.response)
             if lexicon.contrast_class(m.group(2).lower()) in _UNIT_CLASSES]
    if not found:
        return None
    m = rng.choice(found)
    unit = m.group(2).lower()
    options = [w for w in lexicon.contrasting(unit) if " " not in w and (w.endswith("s") == unit.endswith("s"))]
    if not options:
        return None
    return edited(record, "unit", m.start(2), m.end(2), _cased(rng.choice(options), m.group(2)))


def _quantity(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    return _word_swap(record, rng, "quantity", _class_choices("quantity", "frequency", "multiple"))


def _antonym(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    return _word_swap(record, rng, "antonym",
                      lambda w: [lexicon.ANTONYMS_EXTENDED[w]] if w in lexicon.ANTONYMS_EXTENDED
                      and w not in _COMPARISONS else [])


def _comparison(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    return _word_swap(record, rng, "comparison",
                      lambda w: [lexicon.ANTONYMS_EXTENDED[w]] if w in _COMPARISONS else [])


@functools.lru_cache(maxsize=8192)
def _names_in(context: str) -> tuple[str, ...]:
    """Capitalised names of ``context`` that do not start a sentence."""
    return tuple(m.group() for m in NAME.finditer(context)
                 if m.start() > 0 and context[m.start() - 2:m.start()].strip() not in ".!?\"{")


@functools.lru_cache(maxsize=8192)
def _plain_sentences(context: str) -> tuple[str, ...]:
    """Sentences of 6–30 words of a non-JSON ``context`` that start with a capital."""
    if context.lstrip().startswith("{"):
        return ()
    pieces = (p.strip() for p in re.split(r"(?<=[.!?])\s+|\n+", context))
    return tuple(s for s in pieces if 6 <= len(s.split()) <= 30 and s[:1].isupper() and s[-1:] in ".!?")


def _other_names(record: Record, pool: Sequence[Record], rng: random.Random, limit: int = 40) -> list[str]:
    """Capitalised names (one to three words) of other sources' contexts that this context lacks."""
    donors = rng.sample(list(pool), min(limit, len(pool))) if pool else []
    names = {name for r in donors if r.source_id != record.source_id for name in _names_in(r.context)}
    return sorted(n for n in names if n.lower() not in record.context.lower() and len(n) > 3
                  and n.lower() not in lexicon.STOPLIKE_NAMES)


def _name_new(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    found = [m for m in NAME.finditer(record.response)
             if m.start() > 0 and record.response[m.start() - 2:m.start()].strip() not in ".!?"]
    others = _other_names(record, pool, rng)
    if not found or not others:
        return None
    m = rng.choice(found)
    same_shape = [n for n in others if len(n.split()) == len(m.group().split())] or others
    return edited(record, "name-new", m.start(), m.end(), rng.choice(same_shape))


def _sentence_ends(response: str) -> list[int]:
    """Offsets of the final ``.``/``!``/``?`` of each sentence (where a clause can be added before)."""
    return [m.end() - 1 for m in SENTENCE.finditer(response) if m.group().rstrip()[-1:] in ".!?"]


def _attribution(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    others = [n for n in _other_names(record, pool, rng) if len(n.split()) >= 2]
    verbs = list(_PARTICIPLE.finditer(record.response))
    if not others:
        return None
    name = rng.choice(others)
    if verbs and rng.random() < 0.6:
        m = rng.choice(verbs)
        title = rng.choice(lexicon.TITLES) + " " if rng.random() < 0.4 else ""
        new = f" by {title}{name}"
        return inserted(record, "attribution", m.end(), new, 1, len(new))
    ends = _sentence_ends(record.response)
    if not ends:
        return None
    at = rng.choice(ends)
    new = f", according to {name}"
    return inserted(record, "attribution", at, new, 2, len(new))


def _figure(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    ends = _sentence_ends(record.response)
    if not ends:
        return None
    template = rng.choice(lexicon.FIGURE_TEMPLATES)
    new = ", " + template.format(n=rng.choice([2, 3, 4, 7, 12, 15, 25, 40, 60, 150, 300, 1200]))
    if any(w in record.context.lower() for w in new.lower().split() if w[:1].isdigit()):
        return None
    return inserted(record, "figure", rng.choice(ends), new, 2, len(new))


def _recommendation(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    ends = [m.end() for m in SENTENCE.finditer(record.response)]
    if not ends:
        return None
    new = " " + rng.choice(lexicon.RECOMMENDATIONS)
    return inserted(record, "recommendation", rng.choice(ends), new, 1, len(new))


def _donor_sentences(record: Record, rng: random.Random, pool: Sequence[Record]) -> list[str]:
    donors = [r for r in rng.sample(list(pool), min(20, len(pool))) if r.source_id != record.source_id] \
        if pool else []
    return [s for r in donors for s in _plain_sentences(r.context)]


def _addition(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    ends = _sentence_ends(record.response)
    sentences = _donor_sentences(record, rng, pool)
    if not ends or not sentences:
        return None
    clause = rng.choice(sentences).rstrip(".!?")
    first = clause.split()[0]
    words = clause.split()
    keep_capital = first.isupper() or (len(words) > 1 and words[1][:1].isupper() and first.lower() not in
                                       _LOWER_STARTS)  # "Maria Lopez said ..." keeps its capital
    clause = clause if keep_capital else clause[:1].lower() + clause[1:]
    new = f", and {clause}"
    return inserted(record, "addition", rng.choice(ends), new, 2, len(new))


def _sentence(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    ends = [m.end() for m in SENTENCE.finditer(record.response)]
    sentences = _donor_sentences(record, rng, pool)
    if not ends or not sentences:
        return None
    new = " " + rng.choice(sentences)
    return inserted(record, "sentence", rng.choice(ends), new, 1, len(new))


def _json_keys(context: str) -> tuple[list[str], set[str]]:
    """For a JSON context: phrases of keys whose leaf value is false/null/"no" (``BikeParking`` → ``bike
    parking``), and every lower-case word of the record."""
    import json

    try:
        data = json.loads(context)
    except ValueError:
        return [], set()
    false_phrases: list[str] = []

    def visit(value: object, key: str, parent: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                visit(v, str(k), key)
        elif value is False or value is None or (isinstance(value, str) and value.lower() in ("no", "none",
                                                                                              "false")):
            words = [w.lower() for w in _KEY_PART.findall(key) if w.lower() not in ("restaurants", "business")]
            owner = [w.lower() for w in _KEY_PART.findall(parent)][-1:]
            if words and owner and owner[0] not in words and owner[0] not in ("attributes", "hours"):
                words.append(owner[0])
            if words and len(" ".join(words)) > 3:
                false_phrases.append(" ".join(words))

    visit(data, "", "")
    return false_phrases, set(re.findall(r"[a-z]+", context.lower()))


def _json_false(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    if not record.context.lstrip().startswith("{"):
        return None
    phrases, _ = _json_keys(record.context)
    ends = [m.end() for m in SENTENCE.finditer(record.response)]
    if not phrases or not ends:
        return None
    new = " " + rng.choice(lexicon.JSON_CLAIMS).format(rng.choice(phrases))
    return inserted(record, "json-false", rng.choice(ends), new, 1, len(new))


def _json_invented(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    if not record.context.lstrip().startswith("{"):
        return None
    _, vocabulary = _json_keys(record.context)
    options = [a for a in lexicon.AMENITIES if not set(a.lower().split()) & vocabulary]
    ends = [m.end() for m in SENTENCE.finditer(record.response)]
    if not options or not ends:
        return None
    new = " " + rng.choice(lexicon.JSON_CLAIMS).format(rng.choice(options))
    return inserted(record, "json-invented", rng.choice(ends), new, 1, len(new))


TRANSFER_EDITS: dict[str, Callable[[Record, random.Random, Sequence[Record]], Record | None]] = {
    "date": _date, "unit": _unit, "quantity": _quantity, "antonym": _antonym, "comparison": _comparison,
    "name-new": _name_new, "attribution": _attribution, "figure": _figure, "recommendation": _recommendation,
    "addition": _addition, "sentence": _sentence, "json-false": _json_false, "json-invented": _json_invented}
"""Each transfer kind's edit: ``edit(record, rng, pool)`` → the edited record, or None when nothing fits."""
TRANSFER_KINDS: tuple[str, ...] = tuple(TRANSFER_EDITS)
