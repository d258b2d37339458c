"""Base models, for training and inference alike: packaged weights verified by sha256 (:mod:`.pretrained`), GGUF
files converted once to cached folders (:mod:`.gguf`), Hugging Face plumbing (dtypes, 4-bit config, pad token,
local folder checks, resolving a recipe's or a run's base model: :mod:`.hf_models`) and tiny random models built in
code (:mod:`.tiny`). Imports only :mod:`ragtruth_spans.core`."""
