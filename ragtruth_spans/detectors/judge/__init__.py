"""The LLM-judge family (``kind: llm-judge``): an LLM behind any OpenAI-compatible endpoint finds the hallucinated
spans, in span mode (the RAGTruth detection prompt) or claims mode (per-sentence verdicts). See docs/JUDGE.md."""
