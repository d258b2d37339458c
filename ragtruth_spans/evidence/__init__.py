"""Evidence for every flagged span: where in the context its claim is contradicted, or that nothing supports it
(docs/EVIDENCE.md). A shared step after detection, for every detector family: :class:`EvidenceFinder`,
:func:`attach_evidence`, :func:`attach_evidence_batch`. Offsets of the evidence are characters of the context,
half-open ``[start, end)``."""

from ragtruth_spans.evidence.finder import (
    MODES,
    EvidenceFinder,
    attach_evidence,
    attach_evidence_batch,
    claim_of,
)
from ragtruth_spans.evidence.verdict import VerdictSettings

__all__ = ["MODES", "EvidenceFinder", "VerdictSettings", "attach_evidence", "attach_evidence_batch", "claim_of"]
