"""Data: the RAGTruth reader (:mod:`.ragtruth`), ``prepare`` and its splits (:mod:`.prepare`) and the embedded
sample (``sample_data/``)."""
