"""The generative detector family: prompts, parsing and alignment of generated spans, the HF and vLLM backends,
its recipe and its QLoRA trainer. ``FAMILY`` (in :mod:`.family`) is what the loader and ``train`` use."""
