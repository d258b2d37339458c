"""The two-tier claim detector (RAGHalu, Zimmerman et al. 2024): tier 1 sets aside the sentences that state
nothing checkable (:mod:`.tier1`), tier 2 judges the others against the context with a fine-tuned cross-encoder."""
