"""Training: recipes and ``--set`` overrides (:mod:`.recipe`), the records a recipe trains on (:mod:`.data`),
shared Hugging Face model plumbing (:mod:`.hf_models`), the run directory (:mod:`.run_dir`), tiny models for CPU
tests (:mod:`.tiny`) and the ``train`` entry that dispatches on the recipe's kind (:mod:`.run`)."""
