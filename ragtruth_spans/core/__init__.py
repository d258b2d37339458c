"""Core: the data types (:mod:`.types`), the error type (:mod:`.errors`), JSON-lines files (:mod:`.jsonl`), the
predictions file format (:mod:`.predictions`) and interval arithmetic on character spans (:mod:`.intervals`)."""
