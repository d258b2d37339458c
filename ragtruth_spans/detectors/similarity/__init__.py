"""The similarity family: DelucionQA's sentence-similarity and keyword-match baselines (see :mod:`.detector`)."""
