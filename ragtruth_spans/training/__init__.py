"""Training: recipes and ``--set`` overrides (:mod:`.recipe`, files: :mod:`.recipe_files`), the records a recipe
trains on (:mod:`.data`), claiming and resuming a run (:mod:`.run`), TrainingArguments (:mod:`.arguments`) and the
one threshold tuner (:mod:`.tuning`). What inference needs too lives below: base models in
:mod:`ragtruth_spans.models`, the run directory in :mod:`ragtruth_spans.runs`."""
