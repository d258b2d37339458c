"""The evidence of one flagged span: where in the context its claim is contradicted, or that nothing supports it.

Offsets here are **characters of the context** (Python ``str`` indices = Unicode code points), half-open
``[start, end)``, so ``context[p.start:p.end]`` is a passage's text. (A span's own offsets are characters of the
response.) On a span of a predictions file or an answer, evidence is three optional keys::

    {"start": 12, "end": 30, ...,
     "verdict": "contradicted",                      # or "unsupported" / "uncertain"
     "reason": "the context has 1998, not 1999",      # one line for a person
     "evidence": [{"start": 140, "end": 212, "score": 0.71, "conflicts": [[171, 175]]}, ...]}

``evidence`` lists the context passages most relevant to the span's claim, best first; ``conflicts`` (optional)
are the characters of a passage that state something else than the span (a different number, date, name, or a
``false``/``"no"`` value of a Data2txt field). The evaluator ignores all three keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

VERDICTS: tuple[str, ...] = ("contradicted", "unsupported", "uncertain")
"""``contradicted``: the context states something else; ``unsupported``: nothing in the context states it;
``uncertain``: the context seems to support it, or the signals disagree."""
EVIDENCE_KEYS: tuple[str, ...] = ("verdict", "reason", "evidence")
"""The keys evidence adds to a span's dict."""


@dataclass(frozen=True)
class Passage:
    """A context passage ``[start, end)`` (characters of the context), its relevance ``score`` in [0, 1] to the
    span's claim, and ``conflicts``: sub-intervals of the context that state something else than the span."""

    start: int
    end: int
    score: float
    conflicts: tuple[tuple[int, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"start": self.start, "end": self.end, "score": round(self.score, 4)}
        if self.conflicts:
            d["conflicts"] = [list(c) for c in self.conflicts]
        return d


@dataclass(frozen=True)
class SpanEvidence:
    """The verdict on one span's claim, a one-line ``reason`` and the passages, best first."""

    verdict: str
    passages: tuple[Passage, ...] = ()
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The keys added to the span's dict (:data:`EVIDENCE_KEYS`)."""
        return {"verdict": self.verdict, "reason": self.reason, "evidence": [p.to_dict() for p in self.passages]}

    def max_end(self) -> int:
        """The largest passage or conflict end (0 without passages): it must not exceed the context's length."""
        return max([p.end for p in self.passages] + [c[1] for p in self.passages for c in p.conflicts], default=0)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _interval(value: Any, what: str) -> tuple[int, int]:
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise ValueError(f"{what} must be [start, end] integers, got {value!r}")
    if value[0] < 0 or value[1] < value[0]:
        raise ValueError(f"{what} [{value[0]}, {value[1]}) is not a valid half-open interval")
    return int(value[0]), int(value[1])


def _passage(obj: Any, index: int) -> Passage:
    if not isinstance(obj, dict):
        raise ValueError(f"evidence[{index}] must be an object {{start, end, score}}, got {type(obj).__name__}")
    start, end = _interval([obj.get("start"), obj.get("end")], f"evidence[{index}]")
    score = obj.get("score", 0.0)
    if not _finite(score):
        raise ValueError(f"evidence[{index}].score must be a finite number, got {score!r}")
    conflicts = obj.get("conflicts") or []
    if not isinstance(conflicts, list):
        raise ValueError(f"evidence[{index}].conflicts must be a list of [start, end], got {conflicts!r}")
    return Passage(start, end, float(score),
                   tuple(_interval(c, f"evidence[{index}].conflicts[{j}]") for j, c in enumerate(conflicts)))


def evidence_from_dict(obj: dict[str, Any]) -> SpanEvidence | None:
    """The evidence keys of a span's dict, or None when it has none; a malformed value raises ``ValueError``
    naming the key."""
    if not any(key in obj for key in EVIDENCE_KEYS):
        return None
    verdict = obj.get("verdict")
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    reason = obj.get("reason") or ""
    if not isinstance(reason, str):
        raise ValueError(f"reason must be a string, got {reason!r}")
    passages = obj.get("evidence") or []
    if not isinstance(passages, list):
        raise ValueError(f"evidence must be a list of passages, got {type(passages).__name__}")
    return SpanEvidence(verdict=verdict, reason=reason, passages=tuple(_passage(p, i) for i, p in enumerate(passages)))
