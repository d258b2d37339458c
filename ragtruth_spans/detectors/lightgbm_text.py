"""Loading a LightGBM model saved as text (``model_to_string``) without letting a damaged file take the process down.

LightGBM parses the trees of a text model in parallel and aborts the whole process (``std::terminate``, exit 134)
when a tree is cut or malformed, and its C++ logger prints warnings to **stdout**. :func:`check_model_text` checks
the structure first, in Python (header keys, one ``Tree=i`` block per ``tree_sizes`` entry whose byte size
matches, every array of each tree numeric and of the length its ``num_leaves`` implies, child and feature indices
in range, ``end of trees``); :func:`load_booster` then builds the booster with LightGBM's messages sent to the
``lightgbm`` logger (stderr), never stdout, and any error of LightGBM as one :class:`InputError` naming the file.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError

HEADER_KEYS = ("version", "num_class", "num_tree_per_iteration", "max_feature_idx", "feature_names", "tree_sizes")
PER_SPLIT = ("split_feature", "split_gain", "threshold", "decision_type", "left_child", "right_child",
             "internal_value", "internal_weight", "internal_count")
PER_LEAF = ("leaf_value", "leaf_weight", "leaf_count")
END = "end of trees"


def _numbers(text: str, key: str, where: str, path: Path) -> list[float]:
    values = []
    for token in text.split():
        try:
            value = float(token)
        except ValueError:
            raise InputError(f"damaged LightGBM model: {where}: {key} holds {token[:20]!r}, not a number",
                             path=path) from None
        if math.isnan(value):
            raise InputError(f"damaged LightGBM model: {where}: {key} holds NaN", path=path)
        values.append(value)
    return values


def _fields(block: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in block.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value
    return out


def _check_tree(index: int, block: str, n_features: int, path: Path) -> None:
    where = f"tree {index}"
    fields = _fields(block)
    if fields.get("Tree") != str(index):
        raise InputError(f"damaged LightGBM model: expected Tree={index} here", path=path)
    try:
        leaves = int(fields.get("num_leaves", ""))
    except ValueError:
        raise InputError(f"damaged LightGBM model: {where} has no valid num_leaves", path=path) from None
    if leaves < 1:
        raise InputError(f"damaged LightGBM model: {where} has num_leaves {leaves}", path=path)
    if "leaf_value" not in fields:
        raise InputError(f"damaged LightGBM model: {where} has no leaf_value", path=path)
    for key in PER_LEAF + (PER_SPLIT if leaves > 1 else ()):
        if key not in fields:
            if key in ("leaf_weight", "leaf_count", "internal_value", "internal_weight", "internal_count"):
                continue
            raise InputError(f"damaged LightGBM model: {where} has no {key}", path=path)
        values = _numbers(fields[key], key, where, path)
        expected = leaves if key in PER_LEAF else leaves - 1
        if leaves == 1 and key in ("leaf_weight", "leaf_count") and not values:
            continue  # LightGBM writes these empty for a tree of one leaf (a constant model)
        if len(values) != expected:
            raise InputError(f"damaged LightGBM model: {where}: {key} has {len(values)} values, expected "
                             f"{expected}", path=path)
        if key == "split_feature" and any(v != int(v) or not 0 <= v < n_features for v in values):
            raise InputError(f"damaged LightGBM model: {where}: a split feature is out of range", path=path)
        if key in ("left_child", "right_child") and any(v != int(v) or not -leaves <= v < leaves - 1
                                                        for v in values):
            raise InputError(f"damaged LightGBM model: {where}: a child index is out of range", path=path)
    for key in ("num_cat", "shrinkage", "is_linear"):
        if key in fields:
            _numbers(fields[key], key, where, path)
    if fields.get("num_cat", "0").strip() not in ("0", ""):
        raise InputError(f"damaged LightGBM model: {where}: categorical splits are not used here", path=path)


def check_model_text(text: str, path: Path) -> None:
    """Raise :class:`InputError` unless ``text`` is a structurally whole LightGBM text model (module docstring)."""
    if not text.startswith("tree\n"):
        raise InputError("not a LightGBM text model (it must start with 'tree')", path=path)
    head, sep, _ = text.partition("\nTree=")
    if not sep:
        raise InputError("damaged LightGBM model: no tree", path=path)
    header = _fields(head)
    missing = [key for key in HEADER_KEYS if key not in header]
    if missing:
        raise InputError(f"damaged LightGBM model: the header lacks {', '.join(missing)}", path=path)
    try:
        n_features = int(header["max_feature_idx"]) + 1
    except ValueError:
        raise InputError("damaged LightGBM model: max_feature_idx is not an integer", path=path) from None
    if len(header["feature_names"].split()) != n_features:
        raise InputError("damaged LightGBM model: feature_names and max_feature_idx disagree", path=path)
    sizes = _numbers(header["tree_sizes"], "tree_sizes", "header", path)
    end = text.find(f"\n{END}\n")
    if end < 0:
        raise InputError(f"damaged LightGBM model: cut short (no '{END}')", path=path)
    data = text.encode("utf-8")
    offset = len(head.encode("utf-8")) + 1
    limit = len(text[:end].encode("utf-8")) + 1
    for index, size in enumerate(sizes):
        if size != int(size) or size < 1 or offset + int(size) > limit:
            raise InputError(f"damaged LightGBM model: tree {index} does not fit its recorded size", path=path)
        block = data[offset:offset + int(size)].decode("utf-8", errors="replace")
        _check_tree(index, block, n_features, path)
        offset += int(size)
    if data[offset:limit].strip():
        raise InputError("damaged LightGBM model: bytes between the trees and their end do not belong to a tree",
                         path=path)


def load_booster(path: Path) -> Any:
    """The booster saved as text at ``path``, checked by :func:`check_model_text` first; LightGBM's messages go
    to the ``lightgbm`` logger (stderr), never to stdout; any failure is one :class:`InputError` naming ``path``."""
    import lightgbm

    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not a LightGBM text model (not UTF-8 text)", path=path) from None
    check_model_text(text, path)
    lightgbm.register_logger(logging.getLogger("lightgbm"))  # its default logger prints to stdout
    try:
        return lightgbm.Booster(model_str=text)
    except lightgbm.basic.LightGBMError as exc:
        raise InputError(f"LightGBM cannot load this model: {str(exc).splitlines()[0][:200]}", path=path) from None
