"""Sentence embeddings for the sentence-level detectors: a sentence-transformers model (all-MiniLM-L6-v2 by
default, resolved offline and sha256-verified by :func:`ragtruth_spans.models.pretrained.resolve_model`), with
a cache of context encodings bounded in bytes (:mod:`~ragtruth_spans.detectors.shared.context_cache`: the responses
of one source, the candidates of one selection and the sentences of one stream share their context) and a bounded
cache of sentence embeddings by text (:meth:`SentenceEncoder.embed`: each distinct text is encoded once, in one
batched call).
:func:`shared_encoder` loads a model once per process, so several detectors on one encoder share it."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.lru import BoundedCache
from ragtruth_spans.core.threads import native_pool, native_workers
from ragtruth_spans.detectors.shared.context_cache import DEFAULT_CACHE_BYTES, ContextCache, context_key
from ragtruth_spans.detectors.shared.encoder_runtime import (
    PRECISION,
    RUNTIMES,
    checked_layers,
    load_sentence_transformer,
    mean_pooling_layout,
    onnx_transformer,
)
from ragtruth_spans.models.pretrained import MINILM

logger = logging.getLogger(__name__)

TEXT_CACHE_SIZE = 50_000
"""Sentence embeddings kept by text (384 float32 each for MiniLM: about 75 MB when full)."""
SENTENCE_CACHE_SIZE = 1024
"""Response sentences whose sentence and token embeddings :meth:`SentenceEncoder.encode_with_tokens` keeps with
``cached=True`` (~30 tokens x 384 float32 each: ~50 MB when full)."""


class SentenceEncoder:
    """L2-normalised sentence embeddings (so a dot product is the cosine similarity); ``layers``: only the
    transformer's first that many layers run (None: all; a mean-pooled transformer folder only) — a faster,
    coarser encoder whose features are its own, as int8's are."""

    def __init__(self, name_or_path: str = MINILM, *, device: str | None = None, batch_size: int = 64,
                 runtime: str = "auto", context_cache_bytes: int = DEFAULT_CACHE_BYTES,
                 layers: int | None = None) -> None:
        from ragtruth_spans.models.hf_models import loading
        from ragtruth_spans.models.pretrained import resolve_model

        if runtime not in RUNTIMES:
            raise InputError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}", field="runtime")
        if runtime.startswith("onnx") and (device or "cpu") != "cpu":
            raise InputError(f"runtime {runtime} runs on the CPU only, got device {device!r}", field="runtime")
        self.name_or_path = name_or_path
        path, self.revision = resolve_model(name_or_path)
        self.batch_size = batch_size
        self._max_length = mean_pooling_layout(path)
        self.layers = checked_layers(layers, path, self._max_length)
        self.model: Any = None
        self._transformer: Any = None
        self._onnx: Any = None
        # int8 runs each text alone; with more than one core those passes run side by side (:meth:`_passes`)
        side_by_side = PRECISION[runtime] == "int8" and native_workers() > 1
        if self._max_length is not None and runtime != "torch" and (device or "cpu") == "cpu":
            self._onnx = onnx_transformer(name_or_path, path, self._max_length, PRECISION[runtime], self.layers,
                                           threads=1 if side_by_side else None)
        self._side_by_side = side_by_side and self._onnx is not None
        if self._onnx is None and runtime.startswith("onnx"):
            raise InputError(f"runtime {runtime} needs ONNX Runtime and a BERT-type sentence-transformers folder "
                             "(or the exporter: onnx, onnxscript, torch) for this encoder; runtime torch or auto "
                             "runs it on torch", field="runtime")
        if self._onnx is None:
            with loading(path, "sentence encoder"):
                if self._max_length is not None:  # one transformer pass gives sentences and tokens; no import of ST
                    from ragtruth_spans.models.onnx_encoder import load_transformer

                    self._transformer = load_transformer(path, self.layers).to(device or "cpu")
                else:
                    self.model = load_sentence_transformer(path, device)
                    self._transformer, self._max_length = self.model[0].auto_model, self.model.max_seq_length
        self.runtime = runtime if runtime.startswith("onnx") else "onnx-fp32" if self._onnx is not None else "torch"
        self.precision = PRECISION[self.runtime]
        """The features this encoder gives (``fp32`` or ``int8``)."""
        self.context_cache = ContextCache(context_cache_bytes)
        """The context encodings (unit and token embeddings) kept, bounded in bytes."""
        cut = "" if self.layers is None else f"/layers={self.layers}"
        self._identity = f"{name_or_path}@{self.revision}/{self.runtime}/{self._max_length}{cut}"
        self._texts = BoundedCache(TEXT_CACHE_SIZE)  # text -> sentence embedding (embed)
        self._sentences = BoundedCache(SENTENCE_CACHE_SIZE)  # text -> (sentence, (offsets, tokens))
        self._path = path
        self._fast_tokenizer: Any = None

    def dimension(self) -> int:
        """The embedding size."""
        if self._onnx is not None:
            return self._onnx.dimension
        if self.model is None:
            return int(self._transformer.config.hidden_size)
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get() or 0)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``len(texts) x dim`` float32 array of unit-length embeddings (``0 x dim`` for no text)."""
        if not texts:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        if self.model is None:  # one transformer pass, no token embeddings
            out = np.zeros((len(texts), self.dimension()), dtype=np.float32)
            for i, pooled, _, _ in self._passes(texts, with_tokens=False):
                out[i] = pooled
            return out
        return np.asarray(self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                            convert_to_numpy=True, show_progress_bar=False), dtype=np.float32)

    def encode_units(self, units: Sequence[str]) -> np.ndarray:
        """:meth:`encode` of a context's evidence units, kept in :attr:`context_cache` by their texts."""
        return self.context_cache.get_or_make(context_key(self._identity, "units", units), lambda: self.encode(units))

    def embed(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """``{text: unit-length embedding}`` for every text of ``texts``: the ones not seen lately are encoded
        together in one :meth:`encode` call (each distinct text once), the others come from the cache."""
        found: dict[str, np.ndarray] = {}
        missing: dict[str, None] = {}
        for text in texts:
            if text in found or text in missing:
                continue
            cached = self._texts.get(text)
            if cached is None:
                missing[text] = None
            else:
                found[text] = cached
        if missing:
            for text, row in zip(missing, self.encode(list(missing))):
                found[text] = row
                self._texts.put(text, row)
        return found

    def _tokenizer(self) -> Any:
        if self._fast_tokenizer is None:
            from transformers import AutoTokenizer

            self._fast_tokenizer = AutoTokenizer.from_pretrained(self._path, use_fast=True, local_files_only=True)
        return self._fast_tokenizer

    def _tokenize(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """``texts`` tokenized together (NumPy arrays by name, offsets and special tokens included), right-padded
        to the longest and cut at the model's ``max_seq_length``."""
        if self._onnx is not None:
            return dict(self._onnx.tokenizer(texts).arrays)
        batch = self._tokenizer()(list(texts), padding=True, truncation=True, max_length=self._max_length,
                                  return_offsets_mapping=True, return_special_tokens_mask=True, return_tensors="np")
        return {name: np.asarray(batch[name]) for name in batch}

    def _hidden(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """The last hidden states (``b x s x dim`` float32) of a tokenized batch."""
        if self._onnx is not None:
            return self._onnx.hidden(batch)
        import torch

        inputs = {name: torch.from_numpy(batch[name]).to(self._transformer.device)
                  for name in ("input_ids", "attention_mask", "token_type_ids") if name in batch}
        with torch.inference_mode():
            return self._transformer(**inputs).last_hidden_state.float().cpu().numpy()

    def _passes(self, texts: Sequence[str], with_tokens: bool = True
                ) -> Iterator[tuple[int, np.ndarray, np.ndarray | None, np.ndarray | None]]:
        """One transformer pass over ``texts``, tokenized once and run in batches of similar token counts
        (:func:`length_batches`, each batch cut to its longest text): per text, ``(index, sentence, offsets,
        tokens)`` — its mean-pooled unit-length embedding, the character interval ``[start, end)`` of each word
        piece (special tokens left out) and their unit-length contextual embeddings (both None without
        ``with_tokens``); texts cut at the model's ``max_seq_length``. On int8 each text runs alone, so that what
        it is batched with never changes its embedding (as on fp32, where batching changes nothing). No text, no
        pass (a tokenizer cannot batch nothing: ONNX's arrays would not reshape, torch's would have no row)."""
        if not texts:
            return
        tokenized = self._tokenize(texts)
        lengths = tokenized["attention_mask"].sum(1)
        # int8: each text alone, since dynamic quantization scales a batch's activations by the whole batch's
        # range (a sentence batched with others moved by up to cosine 0.03): a text's embedding is then its own.
        # Those passes run side by side, one core each (longest first), on one-thread sessions (the same
        # arrays bit for bit as on a session of two threads: measured on 394 pool sentences).
        alone = self.precision == "int8"
        chunks = [[i] for i in np.argsort(-lengths, kind="stable").tolist()] if alone else \
            length_batches(lengths.tolist(), self.batch_size)
        run = partial(self._chunk_pass, tokenized, lengths, with_tokens)
        parallel = self._side_by_side and len(chunks) > 1
        for chunk, (pooled, offsets, tokens) in zip(chunks, native_pool().map(run, chunks) if parallel else
                                                    map(run, chunks)):
            for row, i in enumerate(chunk):
                if tokens is None:
                    yield i, pooled[row], None, None
                else:
                    yield i, pooled[row], offsets[row], tokens[row]

    def _chunk_pass(self, tokenized: dict[str, np.ndarray], lengths: np.ndarray, with_tokens: bool,
                    chunk: list[int]) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray] | None]:
        """One batch of :meth:`_passes`: the texts ``chunk`` (indices into ``tokenized``) cut to their longest;
        ``(pooled, offsets, tokens)`` per row — offsets and tokens of the word pieces only (None without
        ``with_tokens``)."""
        batch = {name: array[chunk, :int(lengths[chunk].max())] for name, array in tokenized.items()}
        hidden = self._hidden(batch)
        attention = batch["attention_mask"]
        keep = (batch["special_tokens_mask"] == 0) & (attention == 1)
        mask = attention[..., None].astype(np.float32)
        pooled = _unit((hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9))
        if not with_tokens:
            return pooled, [], None
        tokens = _unit(hidden)
        offsets = batch["offset_mapping"]
        return (pooled, [offsets[row][keep[row]].astype(np.int64) for row in range(len(chunk))],
                [tokens[row][keep[row]] for row in range(len(chunk))])

    def token_embeddings(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text, ``(offsets, embeddings)``: the character interval ``[start, end)`` of each word piece of the
        text (``n x 2`` int) and its unit-length contextual embedding from the encoder's transformer (``n x dim``
        float32); special tokens left out, texts cut at the encoder's ``max_seq_length``."""
        out: list[Any] = [None] * len(texts)
        for i, _, offsets, tokens in self._passes(texts):
            out[i] = (offsets, tokens.astype(np.float32, copy=False))
        return out

    def encode_with_tokens(self, texts: Sequence[str], *, cached: bool = False
                           ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        """``(encode(texts), token_embeddings(texts))``: from one transformer pass when the model is a transformer
        with mean pooling (all-MiniLM-L6-v2: :func:`mean_pooling_layout`; the embeddings equal
        sentence-transformers' to float precision), else from sentence-transformers and a token pass. ``cached``:
        texts encoded lately (the sentences of an answer checked again as it streams) come from a bounded cache of
        :data:`SENTENCE_CACHE_SIZE` texts; the same arrays either way, since a text's pass never depends on what
        it is batched with (fp32: padding is masked, bit for bit; int8: each text runs alone)."""
        if self.model is not None:
            return self.encode(texts), self.token_embeddings(texts)
        sentences = np.zeros((len(texts), self.dimension()), dtype=np.float32)
        tokens: list[Any] = [None] * len(texts)
        todo = []
        for i, text in enumerate(texts):
            kept = self._sentences.get(text) if cached else None
            if kept is None:
                todo.append(i)
            else:
                sentences[i], tokens[i] = kept
        for at, pooled, offsets, embedded in self._passes([texts[i] for i in todo]):
            i = todo[at]
            sentences[i], tokens[i] = pooled, (offsets, embedded.astype(np.float32, copy=False))
            if cached:
                kept = (pooled.copy(), tokens[i])
                for array in (kept[0], *kept[1]):
                    array.setflags(write=False)  # shared by every later check of this text
                self._sentences.put(texts[i], kept)
        return sentences, tokens

    def context_tokens(self, units: Sequence[str]) -> np.ndarray:
        """The token embeddings of every unit of a context stacked (``n x dim``), kept in :attr:`context_cache` by
        the units' texts; the units' sentence embeddings from the same pass are kept for :meth:`encode_units`."""
        def make() -> np.ndarray:
            embeddings, pieces = self.encode_with_tokens(units)
            parts = [emb for _, emb in pieces]
            stacked = np.concatenate(parts) if parts else np.zeros((0, self.dimension()), dtype=np.float32)
            if self.model is None:
                self.context_cache.put(context_key(self._identity, "units", units), embeddings)
            return stacked

        return self.context_cache.get_or_make(context_key(self._identity, "tokens", units), make)

    def prepare_context(self, units: Sequence[str], *, with_tokens: bool) -> None:
        """Encode a context's units into :attr:`context_cache` ahead of the answers that will read them (its
        token embeddings too with ``with_tokens``); a check that asks for them meanwhile waits for this pass."""
        if with_tokens:
            self.context_tokens(units)
        self.encode_units(units)

    def describe(self) -> dict[str, Any]:
        """The encoder and its revision (not the runtime: ONNX Runtime and torch give the same embeddings to
        ~1e-5), ``encoder_precision`` when its features are int8 and ``encoder_layers`` when it runs only its first
        layers."""
        extra = {"encoder_precision": self.precision} if self.precision != "fp32" else {}
        if self.layers is not None:
            extra["encoder_layers"] = self.layers
        return {"encoder": self.name_or_path, "encoder_revision": self.revision, **extra}


def length_batches(lengths: Sequence[int], batch_size: int, spread: float = 0.85, slack: int = 4) -> list[list[int]]:
    """Indices of texts of ``lengths`` (tokens) in batches, longest first (as sentence-transformers orders them),
    at most ``batch_size`` each; a batch also ends before a text shorter than ``spread`` × its first text's length
    by at least ``slack`` tokens, so that padding every text to its batch's longest wastes little (a 2,000-token
    context of sentences of 5 to 80 tokens padded in batches of 64 took 2.0× its tokens; in these batches 1.08×).

    >>> length_batches([3, 60, 58, 30, 4], batch_size=4)
    [[1, 2], [3], [4, 0]]
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        longest = lengths[batches[-1][0]] if batches else 0
        if batches and len(batches[-1]) < batch_size and not (
                lengths[i] < spread * longest and longest - lengths[i] >= slack):
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def _unit(x: np.ndarray) -> np.ndarray:
    """``x`` scaled to unit length along its last axis (as torch's ``normalize``: norms below 1e-12 count as it)."""
    return (x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)).astype(np.float32, copy=False)


_SHARED: dict[tuple[str, str | None, int, str, int | None], SentenceEncoder] = {}


def shared_encoder(name_or_path: str = MINILM, *, device: str | None = None, batch_size: int = 64,
                   runtime: str = "auto", layers: int | None = None) -> SentenceEncoder:
    """The process's :class:`SentenceEncoder` for these settings, loaded on first use (a few are kept)."""
    key = (name_or_path, device, batch_size, runtime, layers)
    if key not in _SHARED:
        if len(_SHARED) >= 4:
            _SHARED.pop(next(iter(_SHARED)))
        _SHARED[key] = SentenceEncoder(name_or_path, device=device, batch_size=batch_size, runtime=runtime,
                                       layers=layers)
    return _SHARED[key]


def max_cosine(sentences: np.ndarray, units: np.ndarray) -> np.ndarray:
    """For each sentence embedding, its highest cosine similarity with any unit (0.0 when there is no unit)."""
    if len(units) == 0 or len(sentences) == 0:
        return np.zeros(len(sentences), dtype=np.float32)
    return (sentences @ units.T).max(axis=1)


def top_units(sentence: np.ndarray, units: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` units most similar to one sentence embedding, in their original order."""
    if len(units) == 0:
        return []
    order = np.argsort(-(units @ sentence), kind="stable")[:k]
    return sorted(int(i) for i in order)
