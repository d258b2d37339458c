"""Pieces several detector families share: response sentences and context evidence units (:mod:`.sentences`), the
sentence encoder (:mod:`.encoder`), the tolerant parser of generated span lists (:mod:`.parsing`) and the alignment
of span texts to character offsets of the response (:mod:`.align`)."""
