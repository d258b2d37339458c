"""Sentence splitting of long contexts is linear (pysbd never sees a piece longer than
LONG_LINE_CHARS) and cached; ordinary lines are split as before, offsets index the original text."""

from __future__ import annotations

from ragtruth_spans.detectors.shared import sentences
from ragtruth_spans.detectors.shared.sentences import LONG_LINE_CHARS, _pieces, split_sentences

SENTENCE = "The hotel in Leeds opened in 1999 and has 120 rooms. "


def test_long_lines_reach_pysbd_in_bounded_pieces_with_exact_offsets(monkeypatch) -> None:
    text = SENTENCE * 600 + "Last one without a full stop"  # one 31,000-character line
    seen: list[int] = []
    real = sentences._segment

    def recording(piece: str) -> list[str]:
        seen.append(len(piece))
        return real(piece)

    sentences._split_cached.cache_clear()
    monkeypatch.setattr(sentences, "_segment", recording)
    spans = split_sentences(text)
    assert max(seen) <= LONG_LINE_CHARS and len(seen) >= len(text) // LONG_LINE_CHARS
    assert len(spans) == 601 and all(text[a:b] == text[a:b].strip() for a, b in spans)
    assert [text[a:b] for a, b in spans[:2]] == [SENTENCE.strip()] * 2
    assert text[spans[-1][0]:spans[-1][1]] == "Last one without a full stop"
    calls = len(seen)
    assert split_sentences(text) == spans and len(seen) == calls  # cached: pysbd is not run again


TRICKY = ["Dr. Smith went to Washington D.C. on Jan. 5. He met Mr. Jones.  Then he left.\n",
          "a. b. a. b.  a. b.", "U.S. U.S. U.S.", "Hi!! Hi!! Hi!!", "e.g. this i.e. that. And 3.5 kg. Then?",
          "The cost was $3.50. It rose (see p. 4). \"Why?\" she asked. 1. First 2. Second",
          "Same. Same. Same. Same.", "   leading space. And a trailing one.   "]


def test_pieces_are_pysbds_own_segments_placed_without_a_pattern_per_sentence() -> None:
    segmenter = sentences._segmenter()
    for line in TRICKY:
        assert sentences._segment(line) == segmenter.segment(line), line


def test_a_new_text_compiles_no_pysbd_pattern_again() -> None:
    compiled = sentences._CompiledOnce._compiled
    split_sentences("Dr. Who met Mr. Smith in the U.S. on Jan. 5. They talked for 3.5 hours. Then?")
    before = compiled.cache_info().misses
    split_sentences("Dr. Who met Mr. Jones in the U.S. on Jan. 6. They walked for 2.5 hours. Why?")
    assert compiled.cache_info().misses == before


def test_pieces_cut_at_sentence_ends_and_rejoin_to_the_line() -> None:
    line = SENTENCE * 100
    pieces = _pieces(line)
    assert "".join(pieces) == line and all(len(p) <= LONG_LINE_CHARS for p in pieces)
    assert all(p.endswith(". ") for p in pieces[:-1])
    assert _pieces("x" * 5000) == ["x" * LONG_LINE_CHARS, "x" * LONG_LINE_CHARS, "x" * 1000]  # no boundary at all
    short = "A short line. Another one."
    assert _pieces(short) == [short]
