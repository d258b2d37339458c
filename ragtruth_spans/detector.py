"""The generative hallucination detector: a base model + LoRA adapter that writes out the hallucinated spans.

``Detector.from_pretrained(output_dir)`` loads what ``ragtruth-spans train`` wrote; ``detect`` /
``detect_batch`` build the same prompt as training (``prompts.build_messages`` → ``fit_context`` →
``render_prompt``), generate greedily (batched, left padding), parse the generated JSON (:mod:`.parsing`) and
align each span text to character offsets of the response (:mod:`.align`). Offsets are characters of the
response, half-open ``[start, end)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import prompts
from .align import FUZZY_THRESHOLD, align_spans
from .parsing import parse_generation
from .recipe import TINY, Recipe, validate_recipe
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

    def diagnostics(self) -> dict[str, Any]:
        """JSON-ready diagnostics (the extra keys of a prediction line)."""
        return {
            "raw": self.raw, "parse_ok": self.parse_ok, "parse_error": self.parse_error,
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


def build_prompt(tokenizer: Any, item: dict[str, Any] | Record, *, prompt_budget: int | None) -> tuple[str, bool]:
    """The generation prompt for ``item`` and whether its context was shortened to fit ``prompt_budget`` tokens."""
    task, context, response, question = item_fields(item)
    shortened = False
    if prompt_budget is not None:
        context, shortened = prompts.fit_context(tokenizer, task, context, response, question, "", prompt_budget)
    messages = prompts.build_messages(task, context, response, question)
    return prompts.render_prompt(tokenizer, messages), shortened


def finish(response: str, raw: str, *, shortened: bool = False,
           fuzzy_threshold: float = FUZZY_THRESHOLD) -> DetectionResult:
    """Parse a generation and align its spans to ``response``."""
    parsed = parse_generation(raw)
    alignment = align_spans(response, parsed.items, fuzzy_threshold=fuzzy_threshold)
    return DetectionResult(spans=alignment.spans, raw=raw, parse_ok=parsed.ok, parse_error=parsed.error,
                           unaligned=alignment.unaligned, truncated=parsed.truncated, shortened=shortened,
                           repairs=parsed.repairs, align_methods=alignment.methods,
                           unknown_types=parsed.unknown_types)


def prompt_budget(max_length: int | None, max_new_tokens: int) -> int | None:
    """Tokens left for the prompt when ``max_new_tokens`` must fit in ``max_length`` (None: no limit).

    The generation reserve never takes more than a quarter of ``max_length`` (the training length, within which
    prompt + target fit), so a short training length still leaves room for the response being checked.
    """
    if not max_length:
        return None
    return max_length - min(max_new_tokens, max_length // 4)


class Detector:
    """A trained detector (Hugging Face backend): greedy, batched generation with left padding."""

    def __init__(self, model: Any, tokenizer: Any, *, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                 max_length: int | None = None, fuzzy_threshold: float = FUZZY_THRESHOLD) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.max_length = max_length
        self.fuzzy_threshold = fuzzy_threshold
        self.generated_tokens = 0  # running count of generated tokens (padding excluded), for throughput reports
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    @classmethod
    def from_pretrained(cls, path: str | Path, *, load_in_4bit: bool | None = None, device: str | None = None,
                        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, max_length: int | None = None,
                        merge: bool = True) -> Detector:
        """Load a training output directory: base model (+ 4-bit if the recipe or ``load_in_4bit`` says so) and
        the LoRA adapter, tokenizer from ``path``.

        ``device``: "cpu", "cuda", ... (default: CUDA when available). ``max_length``: prompt + generation token
        budget (default: the recipe's ``data.max_length``). ``merge``: merge the adapter into unquantized weights
        for faster generation.
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
        return cls(model, tokenizer, max_new_tokens=max_new_tokens, max_length=max_length or info.max_length)

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
        generated batch of ``n`` items."""
        built: list[tuple[str, bool]] = []
        too_long: dict[int, str] = {}
        for i, item in enumerate(items):
            item_fields(item)  # a malformed item is an error for the whole call
            try:
                built.append(build_prompt(self.tokenizer, item, prompt_budget=self.prompt_budget))
            except InputError as exc:  # this response alone does not fit: fail this item, not the run
                built.append(("", False))
                too_long[i] = str(exc)
        lengths = [len(self.tokenizer(p, add_special_tokens=False)["input_ids"]) for p, _ in built]
        order = sorted((i for i in range(len(items)) if i not in too_long), key=lambda i: lengths[i])
        raws: list[str] = [""] * len(items)
        for chunk in _chunks(order, batch_size):
            for i, raw in zip(chunk, self.generate([built[i][0] for i in chunk])):
                raws[i] = raw
            if on_batch is not None:
                on_batch(len(chunk))
        return [DetectionResult(spans=[], raw="", parse_ok=False, parse_error=f"not generated: {too_long[i]}",
                                too_long=True) if i in too_long else
                finish(item_fields(item)[2], raw, shortened=shortened, fuzzy_threshold=self.fuzzy_threshold)
                for i, (item, raw, (_, shortened)) in enumerate(zip(items, raws, built))]

    def generate(self, prompts_text: Sequence[str]) -> list[str]:
        """Greedy continuations of already-rendered prompts (left-padded batch), special tokens removed."""
        import torch

        enc = self.tokenizer(list(prompts_text), return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self.model.device) for k, v in enc.items()}
        with torch.inference_mode():
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      pad_token_id=self.tokenizer.pad_token_id)
        new_tokens = out[:, enc["input_ids"].shape[1]:]
        self.generated_tokens += int((new_tokens != self.tokenizer.pad_token_id).sum())
        return self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)


def _chunks(seq: Sequence[int], size: int) -> Iterable[list[int]]:
    if size < 1:
        raise InputError(f"batch size must be >= 1, got {size}", field="batch_size")
    for i in range(0, len(seq), size):
        yield list(seq[i:i + size])


def _torch_dtype(name: str | None, device: str) -> Any:
    """torch dtype for a recipe's dtype name (``"auto"`` kept for ``from_pretrained``); on CPU everything runs in
    float32 (bf16/fp16 matmuls are slow or unsupported there)."""
    import torch

    if device == "cpu" or not name:
        return torch.float32
    if name == "auto":
        return "auto"
    return getattr(torch, str(name).removeprefix("torch."))
