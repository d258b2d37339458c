"""The entailment family: a cross-encoder NLI model (premise, hypothesis → entailment / neutral / contradiction)
trained here, and a detector that flags each response sentence no context window entails (see :mod:`.detector`)."""
