"""The generative hallucination detector: a base model + LoRA adapter that writes out the hallucinated spans.

``Detector.from_pretrained(output_dir)`` loads what ``ragtruth-spans train`` wrote; ``detect`` /
``detect_batch`` build the same prompt as training (``prompts.build_messages`` → ``fit_context`` →
``render_prompt``), generate greedily (batched, left padding), parse the generated JSON (:mod:`.parsing`) and
align each span text to character offsets of the response (:mod:`.align`). Offsets are characters of the
response, half-open ``[start, end)``.

Confidences, both probabilities of the model itself (see :meth:`Detector.detect_batch`):

- response score ``DetectionResult.score = 1 - P(clean)``, where ``P(clean)`` is the probability that the model
  generates exactly the clean answer: the token ids that training put after the prompt for the target ``[]``
  (:func:`clean_completion_ids`), up to and including the first end-of-sequence token. Computed by teacher
  forcing, one extra forward pass per batch (:meth:`Detector.completion_logprobs`);
- span score ``Span.score``: the mean probability of the generated tokens that spell the item's ``text`` value
  (:func:`item_scores`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from . import prompts
from .align import FUZZY_THRESHOLD, Alignment, align_spans
from .parsing import ParsedItem, parse_generation
from .recipe import TINY, Recipe, torch_dtype, validate_recipe
from .schema import TASK_TYPES, InputError, Record, Span

DEFAULT_MAX_NEW_TOKENS = 512
logger = logging.getLogger(__name__)


@dataclass
class DetectionResult:
    """Spans found in one response plus the diagnostics of how they were obtained.

    ``raw``: the generated text. ``parse_ok``/``parse_error``: whether it could be parsed (a failure yields no
    spans but is *not* "no hallucination"). ``unaligned``: generated span texts not found in the response.
    ``truncated``: the generation was cut (``max_new_tokens``) and only complete items were kept.
    ``shortened``: the context was shortened to fit the model's length budget.
    ``too_long``: the response (with the prompt, without any context) does not fit the budget, so nothing was
    generated; ``parse_ok`` is False and ``parse_error`` says why.
    ``score``: the response's hallucination score ``1 - P(clean)`` in [0, 1] (see the module docstring); None
    when it was not computed (``score_clean=False``, or ``too_long``).
    """

    spans: list[Span]
    raw: str
    parse_ok: bool
    parse_error: str | None = None
    unaligned: list[str] = field(default_factory=list)
    truncated: bool = False
    shortened: bool = False
    repairs: list[str] = field(default_factory=list)
    align_methods: list[str] = field(default_factory=list)
    unknown_types: int = 0
    too_long: bool = False
    score: float | None = None

    def diagnostics(self) -> dict[str, Any]:
        """JSON-ready diagnostics (the extra keys of a prediction line), the response ``score`` first."""
        return {
            "score": self.score, "raw": self.raw, "parse_ok": self.parse_ok, "parse_error": self.parse_error,
            "unaligned": self.unaligned, "truncated": self.truncated, "shortened": self.shortened,
            "repairs": self.repairs, "align_methods": self.align_methods, "unknown_types": self.unknown_types,
            "too_long": self.too_long,
        }


@dataclass(frozen=True)
class ModelDir:
    """What a training output directory says about rebuilding the model (from its ``recipe.yaml``)."""

    path: Path
    base_model: str  # a local directory (``path/base_model`` for the tiny model) or a hub name / path
    revision: str | None
    recipe: Recipe

    @property
    def load_in_4bit(self) -> bool:
        return self.recipe.quantization.enabled

    @property
    def max_length(self) -> int:
        return self.recipe.data.max_length

    @classmethod
    def read(cls, path: str | Path) -> ModelDir:
        """Read and validate ``path/recipe.yaml``; a missing file or bad key raises :class:`InputError`."""
        path = Path(path)
        if not (path / "adapter_config.json").is_file():
            raise InputError("not a trained detector directory (no adapter_config.json)", path=path)
        recipe_file = path / "recipe.yaml"
        if not recipe_file.is_file():
            raise InputError("file not found (the training run writes it next to the adapter)", path=recipe_file)
        try:
            data = yaml.safe_load(recipe_file.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise InputError(f"invalid YAML: {exc}", path=recipe_file) from None
        recipe = validate_recipe(data, source=str(recipe_file))
        if (path / "base_model" / "config.json").is_file():
            return cls(path=path, base_model=str(path / "base_model"), revision=None, recipe=recipe)
        if recipe.model.name_or_path == TINY:
            raise InputError("the tiny base model should be saved under base_model/ but is missing",
                             path=path / "base_model")
        return cls(path=path, base_model=recipe.model.name_or_path, revision=recipe.model.revision, recipe=recipe)


def item_fields(item: dict[str, Any] | Record) -> tuple[str, str, str, str | None]:
    """``(task, context, response, question)`` of a detection item (a dict with ``task`` or ``task_type``, or a
    :class:`Record`); a missing or bad field raises :class:`InputError`."""
    if isinstance(item, Record):
        return item.task_type, item.context, item.response, item.question
    task = item.get("task", item.get("task_type"))
    if task not in TASK_TYPES:
        raise InputError(f"unknown task {task!r} (expected one of {', '.join(TASK_TYPES)})", field="task")
    for key in ("context", "response"):
        if not isinstance(item.get(key), str):
            raise InputError("must be a string", field=key)
    return task, item["context"], item["response"], item.get("question")


def item_messages(tokenizer: Any, item: dict[str, Any] | Record, *,
                   prompt_budget: int | None) -> tuple[list[dict[str, str]], bool]:
    """The chat messages for ``item`` and whether its context was shortened to fit ``prompt_budget`` tokens."""
    task, context, response, question = item_fields(item)
    shortened = False
    if prompt_budget is not None:
        context, shortened = prompts.fit_context(tokenizer, task, context, response, question, "", prompt_budget)
    return prompts.build_messages(task, context, response, question), shortened


def prepare_items(tokenizer: Any, items: Sequence[dict[str, Any] | Record], *, prompt_budget: int | None
                  ) -> tuple[dict[int, tuple[list[dict[str, str]], bool]], dict[int, str]]:
    """``(built, too_long)`` for a batch: ``built[i]`` = the messages of item ``i`` and whether its context was
    shortened; ``too_long[i]`` = why item ``i`` cannot fit ``prompt_budget`` even without context (that item
    fails alone). A malformed item raises :class:`InputError` for the whole batch."""
    built: dict[int, tuple[list[dict[str, str]], bool]] = {}
    too_long: dict[int, str] = {}
    for i, item in enumerate(items):
        item_fields(item)
        try:
            built[i] = item_messages(tokenizer, item, prompt_budget=prompt_budget)
        except InputError as exc:
            too_long[i] = str(exc)
    return built, too_long


def assemble_results(tokenizer: Any, items: Sequence[dict[str, Any] | Record],
                     built: dict[int, tuple[list[dict[str, str]], bool]], too_long: dict[int, str],
                     generations: dict[int, Generation], scores: dict[int, float], *,
                     fuzzy_threshold: float = FUZZY_THRESHOLD) -> list[DetectionResult]:
    """One :class:`DetectionResult` per item, in input order: a too-long item's failure, or its generation parsed,
    aligned and scored (:func:`finish`, :func:`item_scores`; ``scores[i]`` = the response score when computed)."""
    results = []
    for i, item in enumerate(items):
        if i in too_long:
            results.append(DetectionResult(spans=[], raw="", parse_ok=False, too_long=True,
                                           parse_error=f"not generated: {too_long[i]}"))
            continue
        generation = generations[i]
        results.append(finish(item_fields(item)[2], generation.text, shortened=built[i][1],
                              fuzzy_threshold=fuzzy_threshold, score=scores.get(i),
                              score_items=lambda parsed, g=generation: item_scores(tokenizer, g, parsed)))
    return results


def finish(response: str, raw: str, *, shortened: bool = False, fuzzy_threshold: float = FUZZY_THRESHOLD,
           score_items: Callable[[Sequence[ParsedItem]], list[float]] | None = None,
           score: float | None = None) -> DetectionResult:
    """Parse a generation and align its spans to ``response``.

    ``score_items`` (e.g. a partial :func:`item_scores`) gives one confidence per parsed item, set as the
    ``score`` of the item's aligned span; ``score`` is the response's hallucination score.
    """
    parsed = parse_generation(raw)
    alignment = align_spans(response, parsed.items, fuzzy_threshold=fuzzy_threshold)
    spans = alignment.spans
    if score_items is not None and parsed.items:
        spans = _scored_spans(alignment, score_items(parsed.items))
    return DetectionResult(spans=spans, raw=raw, parse_ok=parsed.ok, parse_error=parsed.error,
                           unaligned=alignment.unaligned, truncated=parsed.truncated, shortened=shortened,
                           repairs=parsed.repairs, align_methods=alignment.methods,
                           unknown_types=parsed.unknown_types, score=score)


def _scored_spans(alignment: Alignment, scores: Sequence[float]) -> list[Span]:
    """The aligned spans with the score of the item each came from (``scores``: one per parsed item)."""
    return [replace(span, score=scores[k]) for span, k in zip(alignment.spans, alignment.item_indices)]


def prompt_budget(max_length: int | None, max_new_tokens: int) -> int | None:
    """Tokens left for the prompt when ``max_new_tokens`` must fit in ``max_length`` (None: no limit).

    The generation reserve never takes more than a quarter of ``max_length`` (the training length, within which
    prompt + target fit), so a short training length still leaves room for the response being checked.
    """
    if not max_length:
        return None
    return max_length - min(max_new_tokens, max_length // 4)


@dataclass
class Generation:
    """One greedy generation: ``text`` (special tokens removed), the generated ``token_ids`` up to and including
    the first end-of-sequence token (padding excluded), and the model's probability of each of them."""

    text: str
    token_ids: list[int]
    token_probs: list[float]


class Detector:
    """A trained detector (Hugging Face backend): greedy, batched generation with left padding.

    ``score_clean``: compute the response score ``1 - P(clean)`` (one extra forward pass per batch); False leaves
    ``DetectionResult.score`` None. Span scores are always computed (they come with the generation).
    """

    def __init__(self, model: Any, tokenizer: Any, *, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                 max_length: int | None = None, fuzzy_threshold: float = FUZZY_THRESHOLD,
                 score_clean: bool = True) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.max_length = max_length
        self.fuzzy_threshold = fuzzy_threshold
        self.score_clean = score_clean
        self.generated_tokens = 0  # running count of generated tokens (padding excluded), for throughput reports
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    @classmethod
    def from_pretrained(cls, path: str | Path, *, load_in_4bit: bool | None = None, device: str | None = None,
                        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, max_length: int | None = None,
                        merge: bool = True, score_clean: bool = True) -> Detector:
        """Load a training output directory: base model (+ 4-bit if the recipe or ``load_in_4bit`` says so) and
        the LoRA adapter, tokenizer from ``path``.

        ``device``: "cpu", "cuda", ... (default: CUDA when available). ``max_length``: prompt + generation token
        budget (default: the recipe's ``data.max_length``). ``merge``: merge the adapter into unquantized weights
        for faster generation. ``score_clean``: see :class:`Detector`.
        """
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

        info = ModelDir.read(path)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        quantize = info.load_in_4bit if load_in_4bit is None else load_in_4bit
        kwargs: dict[str, Any] = {"dtype": _torch_dtype(info.recipe.model.dtype, device), "revision": info.revision}
        attn = info.recipe.model.attn_implementation
        if attn and not (attn == "flash_attention_2" and device == "cpu"):
            kwargs["attn_implementation"] = attn
        if quantize:
            q = info.recipe.quantization
            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type=q.quant_type, bnb_4bit_use_double_quant=q.double_quant,
                bnb_4bit_compute_dtype=_torch_dtype(q.compute_dtype, device),
                bnb_4bit_quant_storage=q.quant_storage,
            )
            kwargs["device_map"] = {"": device}
        base = AutoModelForCausalLM.from_pretrained(info.base_model, **kwargs)
        if not quantize:
            base = base.to(device)
        model = PeftModel.from_pretrained(base, str(info.path))
        if merge and not quantize:
            model = model.merge_and_unload()
        model.eval()
        tokenizer = AutoTokenizer.from_pretrained(str(info.path))
        return cls(model, tokenizer, max_new_tokens=max_new_tokens, max_length=max_length or info.max_length,
                   score_clean=score_clean)

    @property
    def prompt_budget(self) -> int | None:
        return prompt_budget(self.max_length, self.max_new_tokens)

    def detect(self, *, context: str, response: str, task: str, question: str | None = None) -> list[Span]:
        """Hallucinated spans of ``response`` (character offsets, half-open); see :meth:`detect_batch`.

        An unreadable generation or an unaligned span is logged as a warning (``detect_batch`` returns them as
        diagnostics): an empty list then means "could not tell", not "no hallucination".
        """
        item = {"context": context, "response": response, "task": task, "question": question}
        result = self.detect_batch([item], batch_size=1)[0]
        if not result.parse_ok:
            logger.warning("could not parse the detector output (%s): %r", result.parse_error, result.raw[:200])
        if result.unaligned:
            logger.warning("%d generated span(s) not found in the response: %r", len(result.unaligned),
                           result.unaligned)
        return result.spans

    def detect_batch(self, items: Sequence[dict[str, Any] | Record], batch_size: int = 8,
                     on_batch: Callable[[int], None] | None = None) -> list[DetectionResult]:
        """Detect spans for each item (dicts with ``context``, ``response``, ``task``, ``question``, or Records),
        in input order. Items are grouped by prompt length to limit padding; ``on_batch(n)`` is called after each
        generated batch of ``n`` items.

        Scores (probabilities of the model, in [0, 1]):

        - ``result.score = 1 - P(clean)`` (when ``score_clean``): ``P(clean)`` is the probability of generating
          exactly the clean completion (:func:`clean_completion_ids`: ``[]`` and the end-of-turn tokens, as in
          training), computed by teacher forcing in one forward pass over the batch's prompts + that completion;
        - ``span.score``: the mean probability of the generated tokens that spell the item's ``text`` value, located
          in the generated text left to right (JSON-escaped form first). An item whose text cannot be located in
          the raw output (e.g. a repaired, single-quoted output with other escapes) gets the mean probability of
          all its generation's tokens instead.
        """
        built, too_long = prepare_items(self.tokenizer, items, prompt_budget=self.prompt_budget)
        prompt_ids = {i: prompts.prompt_token_ids(self.tokenizer, messages) for i, (messages, _) in built.items()}
        order = sorted(built, key=lambda i: len(prompt_ids[i]))
        generations: dict[int, Generation] = {}
        scores: dict[int, float] = {}
        for chunk in _chunks(order, batch_size):
            for i, generation in zip(chunk, self.generate_ids([prompt_ids[i] for i in chunk])):
                generations[i] = generation
            if self.score_clean:
                completions = [clean_completion_ids(self.tokenizer, built[i][0], prompt_ids[i], self.stop_ids)
                               for i in chunk]
                logprobs = self.completion_logprobs([prompt_ids[i] for i in chunk], completions)
                for i, logprob in zip(chunk, logprobs):
                    scores[i] = hallucination_score(logprob)
            if on_batch is not None:
                on_batch(len(chunk))
        return assemble_results(self.tokenizer, items, built, too_long, generations, scores,
                                fuzzy_threshold=self.fuzzy_threshold)

    @property
    def stop_ids(self) -> set[int]:
        """Token ids that end a generation: the generation config's ``eos_token_id`` (int or list) and the
        tokenizer's EOS."""
        config = getattr(self.model, "generation_config", None)
        eos = getattr(config, "eos_token_id", None)
        ids = set(eos if isinstance(eos, (list, tuple)) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return ids

    def generate_ids(self, prompt_ids: Sequence[list[int]]) -> list[Generation]:
        """Greedy generations for prompt token ids (one left-padded batch), with each generated token's probability
        under the model (softmax of the raw logits, ``output_logits=True``)."""
        import torch

        input_ids, attention_mask = self._left_pad(prompt_ids)
        with torch.inference_mode():
            out = self.model.generate(input_ids=input_ids, attention_mask=attention_mask,
                                      max_new_tokens=self.max_new_tokens, do_sample=False,
                                      pad_token_id=self.tokenizer.pad_token_id, return_dict_in_generate=True,
                                      output_logits=True)
            new_tokens = out.sequences[:, input_ids.shape[1]:]
            steps = len(out.logits)
            token_logprobs = torch.stack([
                torch.log_softmax(out.logits[t].float(), dim=-1).gather(-1, new_tokens[:, t:t + 1]).squeeze(-1)
                for t in range(steps)], dim=1) if steps else new_tokens.new_zeros((len(prompt_ids), 0)).float()
        del out
        self.generated_tokens += int((new_tokens != self.tokenizer.pad_token_id).sum())
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        stop = torch.tensor(sorted(self.stop_ids), dtype=torch.long, device=new_tokens.device)
        generations = []
        for row, text, logprobs in zip(new_tokens, texts, token_logprobs):
            is_stop = torch.isin(row, stop).nonzero()
            length = int(is_stop[0]) + 1 if len(is_stop) else len(row)
            generations.append(Generation(text=text, token_ids=row[:length].tolist(),
                                          token_probs=logprobs[:length].exp().tolist()))
        return generations

    def completion_logprobs(self, prompt_ids: Sequence[list[int]],
                            completion_ids: Sequence[list[int]]) -> list[float]:
        """``log P(completion | prompt)`` for each pair, by teacher forcing: one forward pass over the left-padded
        batch of prompt + completion ids, summing the log-probabilities of the completion tokens (position ids
        follow the attention mask, as in ``generate``)."""
        import torch

        if not prompt_ids:
            return []
        input_ids, attention_mask = self._left_pad([p + c for p, c in zip(prompt_ids, completion_ids)])
        keep = max(len(c) for c in completion_ids) + 1  # logits at position t predict the token at t + 1
        position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                logits_to_keep=keep).logits[:, -keep:]
            logprobs = torch.log_softmax(logits.float(), dim=-1)
        totals = []
        for row, completion in enumerate(completion_ids):
            n = len(completion)
            targets = torch.tensor(completion, device=logprobs.device)
            # completion tokens are the last n of the row; their predictions sit at kept positions keep-1-n .. keep-2
            picked = logprobs[row, keep - 1 - n:keep - 1].gather(-1, targets[:, None])
            totals.append(float(picked.sum()))
        return totals

    def _left_pad(self, sequences: Sequence[list[int]]) -> tuple[Any, Any]:
        """``(input_ids, attention_mask)`` tensors on the model's device, left-padded with the pad token."""
        import torch

        width = max(len(s) for s in sequences)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(s)) + list(s) for s in sequences], dtype=torch.long)
        attention_mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences], dtype=torch.long)
        return input_ids.to(self.model.device), attention_mask.to(self.model.device)


# --- confidence scores ------------------------------------------------------------------------------------

def clean_completion_ids(tokenizer: Any, messages: list[dict[str, str]], prompt_ids: Sequence[int],
                         stop_ids: Iterable[int] = ()) -> list[int]:
    """The token ids the model must generate for the clean answer ``[]``, derived as training does (TRL
    prompt-completion): the ids of the whole chat with the assistant message ``prompts.format_target([])``,
    after the ``prompt_ids`` (the generation prompt). They are cut after the first of ``stop_ids`` (generation
    ends there; a template may add tokens after its end-of-turn, e.g. a newline). When the tokenized prompt is
    not a prefix of the tokenized chat (a template rendering the prompt differently), the completion starts where
    the two diverge, as in TRL."""
    text = prompts.render_conversation(tokenizer, messages, prompts.format_target([]))
    full = tokenizer(text, add_special_tokens=False)["input_ids"]
    common = 0
    while common < min(len(full), len(prompt_ids)) and full[common] == prompt_ids[common]:
        common += 1
    completion = list(full[common:])
    stops = set(stop_ids)
    for k, token in enumerate(completion):
        if token in stops:
            return completion[:k + 1]
    return completion


def hallucination_score(clean_logprob: float) -> float:
    """``1 - P(clean)`` from ``log P(clean)``, clipped to [0, 1]."""
    return min(1.0, max(0.0, 1.0 - math.exp(clean_logprob)))


def token_char_ends(tokenizer: Any, token_ids: Sequence[int]) -> list[int]:
    """For each generated token, the length of the text decoded up to and including it (incremental decoding,
    special tokens skipped, made non-decreasing): token ``k`` spells characters ``[ends[k-1], ends[k])`` of the
    decoded text. A token that completes a multi-byte character split across tokens may span 0 characters."""
    ends: list[int] = []
    longest = 0
    for k in range(1, len(token_ids) + 1):
        longest = max(longest, len(tokenizer.decode(list(token_ids[:k]), skip_special_tokens=True)))
        ends.append(longest)
    return ends


def locate_items(raw: str, items: Sequence[ParsedItem]) -> list[tuple[int, int] | None]:
    """Character range ``[start, end)`` in ``raw`` of each item's ``text`` value, searched left to right from the
    end of the previous one: the JSON-escaped form between quotes first, then the escaped form, then the text as
    is (e.g. a single-quoted, repaired output); None when not found."""
    cursor = 0
    found: list[tuple[int, int] | None] = []
    for item in items:
        escaped = json.dumps(item.text, ensure_ascii=False)[1:-1]
        where = None
        for needle, inner in ((f'"{escaped}"', 1), (escaped, 0), (item.text, 0)):
            pos = raw.find(needle, cursor)
            if pos >= 0:
                where = (pos + inner, pos + len(needle) - inner)
                break
        found.append(where)
        if where is not None:
            cursor = where[1]
    return found


def item_scores(tokenizer: Any, generation: Generation, items: Sequence[ParsedItem]) -> list[float]:
    """Confidence of each parsed item: the mean probability of the generated tokens overlapping its ``text`` value
    in the generated text (:func:`locate_items`, :func:`token_char_ends`; a zero-width token counts when it sits
    inside the range). An item that cannot be located gets the mean probability of all generated tokens (end of
    sequence included)."""
    probs = generation.token_probs
    overall = sum(probs) / len(probs) if probs else 0.0
    ranges = locate_items(generation.text, items)
    if all(r is None for r in ranges):
        return [overall] * len(items)
    ends = token_char_ends(tokenizer, generation.token_ids)
    scores = []
    for where in ranges:
        picked = [] if where is None else [
            p for k, p in enumerate(probs)
            if _overlaps(ends[k - 1] if k else 0, ends[k], *where)]
        scores.append(sum(picked) / len(picked) if picked else overall)
    return scores


def _overlaps(token_start: int, token_end: int, start: int, end: int) -> bool:
    if token_start == token_end:
        return start < token_start <= end
    return token_start < end and token_end > start


def _chunks(seq: Sequence[int], size: int) -> Iterable[list[int]]:
    if size < 1:
        raise InputError(f"batch size must be >= 1, got {size}", field="batch_size")
    for i in range(0, len(seq), size):
        yield list(seq[i:i + size])


def _torch_dtype(name: str, device: str) -> Any:
    """:func:`~ragtruth_spans.recipe.torch_dtype`, except that on CPU everything runs in float32 (bf16/fp16 matmuls
    are slow or unsupported there)."""
    import torch

    return torch.float32 if device == "cpu" else torch_dtype(name)
