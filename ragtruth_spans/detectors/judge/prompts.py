"""The judge's prompts: one user message per request (no system message, so every chat template takes it).

- **span** mode follows the detection prompt of the RAGTruth paper (Niu et al., 2024, the prompt-based baselines):
  the same framing per task (a question with its passages and an answer; a news article and its summary;
  structured data and an overview written from it), the same two hallucination types (*conflict*, *baseless
  info*) and the same answer format, a JSON dict ``{"hallucination list": [span, ...]}`` (``[]`` when clean).
  The wording is lightly edited: typos fixed, each task names its own kind of text, and the spans are asked to be
  copied exactly (they are aligned to characters of the response).
- **claims** mode (after Arthur Shield's per-claim evaluator): the response is split into statements; the judge
  sees the source, the whole response (for pronouns and context) and the numbered statements, and answers a JSON
  object mapping each number to ``supported``, ``contradicted``, ``unsupported`` or ``no claim``.

:data:`PROMPT_VERSIONS` changes whenever a prompt's text changes: it is part of every cache key and of the
detector's description, so answers to an older prompt are never reused and a pinned judge refuses new prompts.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.types import TASK_TYPES

PROMPT_VERSIONS: dict[str, str] = {"span": "ragtruth-span-1", "claims": "claims-1"}
"""``{mode: version}`` of the prompt text sent in each mode."""

VERDICTS: tuple[str, ...] = ("supported", "contradicted", "unsupported", "no claim")
"""What the judge may say about one statement in claims mode."""

_SOURCES: dict[str, str] = {
    "QA": "Below is a question:\n{question}\n\nBelow are related passages:\n{context}",
    "Summary": "Below is the original news article:\n{context}",
    "Data2txt": "Below are structured data in the JSON format:\n{context}",
}
_ANSWER_NAMES: dict[str, tuple[str, str]] = {
    "QA": ("answer", "passages"),
    "Summary": ("summary", "news article"),
    "Data2txt": ("overview", "structured data"),
}
_ANSWER_INTROS: dict[str, str] = {
    "QA": "Below is an answer to the question, written from the passages:",
    "Summary": "Below is a summary of the news article:",
    "Data2txt": "Below is an overview written in accordance with the structured data:",
}

_SPAN_TASK = (
    "Your task is to determine whether the {answer} contains either or both of the following two types of "
    "hallucinations:\n"
    "1. conflict: instances where the {answer} directly contradicts or opposes the {source};\n"
    "2. baseless info: instances where the {answer} includes information which is not substantiated by or inferred "
    "from the {source}.\n"
    'Then, compile the hallucinated spans, each copied exactly from the {answer}, into a JSON dict with the key '
    '"hallucination list" whose value is the list of hallucinated spans. If there are potential hallucinations, '
    'the output should be in the following JSON format: {{"hallucination list": [hallucination span1, '
    'hallucination span2, ...]}}. Otherwise, leave the value as an empty list: {{"hallucination list": []}}.\n'
    "Output:"
)

_CLAIMS_TASK = (
    "The {answer} is split into numbered statements:\n{statements}\n\n"
    "Judge every statement against the {source} only, not against your own knowledge:\n"
    '- "supported": stated in the {source}, or clearly follows from the {source};\n'
    '- "contradicted": conflicts with the {source};\n'
    '- "unsupported": not found in the {source} and cannot be inferred from the {source};\n'
    '- "no claim": the statement asserts no fact (a greeting, a question, a refusal to answer, or talk about the '
    "{answer} itself).\n"
    "Answer with one JSON object that maps every statement number to its verdict, for example "
    '{{"1": "supported", "2": "unsupported"}}, and nothing else.'
)


def _source_block(task: str, context: str, question: str | None) -> str:
    check_choice(task, TASK_TYPES, "task type", field="task")
    if task == "QA" and question is None:
        raise InputError("a QA item needs its question", field="question")
    return _SOURCES[task].format(question=question or "", context=context)


def span_messages(task: str, context: str, response: str, question: str | None = None) -> list[dict[str, str]]:
    """The span-mode request: source, response, then the RAGTruth detection instructions."""
    block = _source_block(task, context, question)
    answer, source = _ANSWER_NAMES[task]
    text = f"{block}\n\n{_ANSWER_INTROS[task]}\n{response}\n\n" + _SPAN_TASK.format(answer=answer, source=source)
    return [{"role": "user", "content": text}]


def claims_messages(task: str, context: str, response: str, statements: Sequence[str],
                    question: str | None = None) -> list[dict[str, str]]:
    """The claims-mode request for ``statements`` (numbered from 1, whitespace runs shown as one space), with the
    whole response shown for reference."""
    if not statements:
        raise ValueError("claims_messages needs at least one statement")
    block = _source_block(task, context, question)
    answer, source = _ANSWER_NAMES[task]
    numbered = "\n".join(f"{k}. {' '.join(s.split())}" for k, s in enumerate(statements, start=1))
    text = (f"{block}\n\n{_ANSWER_INTROS[task]}\n{response}\n\n"
            + _CLAIMS_TASK.format(answer=answer, source=source, statements=numbered))
    return [{"role": "user", "content": text}]
