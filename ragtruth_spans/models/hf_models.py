"""Hugging Face model plumbing shared by the families that fine-tune transformers: dtypes, the 4-bit
bitsandbytes configuration (QLoRA), the pad token, and checks of local model folders, so that a broken folder
is a one-line error naming the file and a local folder never sends anyone to the hub."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from ragtruth_spans.core.errors import InputError


class FourBitSettings(Protocol):
    """The 4-bit settings :func:`bitsandbytes_config` reads (a recipe's ``quantization`` section is one)."""

    quant_type: str
    double_quant: bool
    compute_dtype: str
    quant_storage: str


def torch_dtype(name: str, device: str | None = None) -> Any:
    """The torch dtype for a recipe dtype name; ``"auto"`` is passed through for ``from_pretrained``. On CPU
    (``device="cpu"``) everything runs in float32: bf16/fp16 matmuls are slow or unsupported there."""
    import torch

    if device == "cpu":
        return torch.float32
    return "auto" if name == "auto" else getattr(torch, name)


def bitsandbytes_config(quantization: FourBitSettings, device: str | None = None,
                        skip_modules: list[str] | None = None) -> Any:
    """The ``BitsAndBytesConfig`` of a recipe's ``quantization`` section: 4-bit weights (NF4 by default) with
    the section's compute and storage dtypes (compute in float32 on CPU). ``skip_modules``: modules kept in full
    precision (e.g. a newly initialised classification head that is trained in full)."""
    import torch
    from transformers import BitsAndBytesConfig

    q = quantization
    return BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type=q.quant_type, bnb_4bit_use_double_quant=q.double_quant,
        bnb_4bit_compute_dtype=torch_dtype(q.compute_dtype, device),
        bnb_4bit_quant_storage=getattr(torch, q.quant_storage), llm_int8_skip_modules=skip_modules)


def ensure_pad_token(tokenizer: Any) -> Any:
    """Give a tokenizer without a pad token its EOS token as pad token (Llama-class tokenizers have none)."""
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
"""A Hugging Face hub repo id: ``name`` or ``org/name``."""


def is_local_reference(name_or_path: str) -> bool:
    """Whether a model reference names a local folder: it exists, or it cannot be a hub id (absolute or relative
    path syntax, several slashes). Local references are loaded with ``local_files_only`` (no network)."""
    return Path(name_or_path).expanduser().exists() or not HUB_ID.match(name_or_path)


def resolve_base_model(name_or_path: str, revision: str | None = None,
                       gguf_file: str | None = None) -> tuple[str, str | None]:
    """``(path_or_id, revision)`` of a recipe's ``model.name_or_path`` (not the tiny model): a packaged model's
    verified folder and its official revision (:func:`~ragtruth_spans.models.pretrained.resolve_model`; a
    packaged GGUF model's converted folder); with ``gguf_file``, that GGUF file (relative to the folder
    ``name_or_path``, or absolute) converted once to a cached folder (:mod:`ragtruth_spans.models.gguf`); a local
    folder, checked now (a missing one is an :class:`InputError` naming ``model.name_or_path``, not a hub lookup);
    or a hub id with ``revision``."""
    from ragtruth_spans.models.pretrained import resolve_model

    if gguf_file:
        return _gguf_base(name_or_path, gguf_file), None
    base, packaged_revision = resolve_model(name_or_path)
    if is_local_reference(base):
        if not Path(base).expanduser().exists():
            raise InputError(f"base model folder {base!r} not found (a name starting with ./, ../, / or ~, or with "
                             "several slashes, is a local path; hub ids look like org/name)",
                             field="model.name_or_path")
        check_model_folder(base, what="base model")
    return base, packaged_revision or revision


def _gguf_base(name_or_path: str, gguf_file: str) -> str:
    from ragtruth_spans.models.gguf import converted_model_dir, local_gguf

    return str(converted_model_dir(local_gguf(name_or_path, gguf_file)))


def check_gguf_base(base: str, expected: dict[str, Any] | None) -> None:
    """A run trained on a GGUF base (``expected``: its ``run_info.json`` ``base_model.gguf``) must be reloaded on
    the same file: a converted folder of another SHA-256 is an :class:`InputError`."""
    from ragtruth_spans.models.gguf import gguf_provenance

    if not expected or not expected.get("sha256"):
        return
    found = gguf_provenance(base) or {}
    if found.get("sha256") != expected["sha256"]:
        raise InputError(f"the run was trained on the GGUF file with sha256 {expected['sha256']}, but the base "
                         f"model resolves to {found.get('sha256') or 'a non-GGUF model'}", path=base,
                         field="model.gguf_file")


def run_base_model(saved: Path, name_or_path: str, revision: str | None, gguf_file: str | None = None,
                   gguf: dict[str, Any] | None = None) -> tuple[str, str | None]:
    """``(path_or_id, revision)`` of the base model a run directory was trained on: the run's own copy ``saved``
    (its ``base_model/`` folder, where the tiny model lives; checked), else the recipe's ``name_or_path`` (and
    ``gguf_file``) as a packaged model's verified folder and its official revision, a converted GGUF (whose
    sha256 must be ``gguf["sha256"]``, the run's record), a local folder (checked) or a hub id with
    ``revision``. A tiny run without its saved base is an :class:`InputError`."""
    from ragtruth_spans.models.pretrained import resolve_model
    from ragtruth_spans.models.tiny import TINY

    if (saved / "config.json").is_file():
        check_model_folder(saved, what="base model")
        return str(saved), None
    if name_or_path == TINY:
        raise InputError(f"the tiny base model should be saved under {saved.name}/ but is missing", path=saved)
    if gguf_file:
        base, packaged_revision = _gguf_base(name_or_path, gguf_file), None
    else:
        base, packaged_revision = resolve_model(name_or_path)
    check_gguf_base(base, gguf)
    if is_local_reference(base):
        check_model_folder(base, what="base model")
    return base, packaged_revision or revision


def resolved_revision(model: Any, name_or_path: str) -> str | None:
    """The commit that the hub revision a base model was loaded at (e.g. ``main``) resolved to, read from the
    loaded ``model`` (a PEFT wrapper is unwrapped): recorded in ``run_info.json`` as
    ``base_model.resolved_revision`` so that inference reloads exactly this base (:func:`run_base_model`). None for
    a local folder (a packaged model included: its revision is fixed by the package) or when unknown."""
    if is_local_reference(name_or_path):
        return None
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    commit = getattr(getattr(base, "config", None), "_commit_hash", None)
    return commit if isinstance(commit, str) else None


def check_model_folder(path: str | Path, *, what: str = "model") -> None:
    """A local model folder must exist and hold a readable ``config.json``; its ``*.safetensors`` weights must be
    complete. Anything else is an :class:`InputError` naming the file (instead of a traceback, or a hub lookup)."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise InputError(f"{what} folder not found (a local path; hub ids look like org/name)", path=path)
    config = path / "config.json"
    if not config.is_file():
        raise InputError(f"not a {what} folder: config.json is missing", path=path)
    read_json_object(config)
    for weights in sorted(path.glob("*.safetensors")):
        check_safetensors(weights)


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file that must hold an object; anything else is an :class:`InputError` naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not readable JSON ({exc})", path=path) from None
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got {type(data).__name__}", path=path)
    return data


def check_safetensors(path: Path) -> None:
    """A ``.safetensors`` file must be whole: its header parses and its tensors fit in the file."""
    size = path.stat().st_size if path.is_file() else -1
    if size < 8:
        raise InputError("missing or empty weights file" if size <= 0 else "truncated weights file", path=path)
    with path.open("rb") as fh:
        header_len = int.from_bytes(fh.read(8), "little")
        if header_len > size - 8:
            raise InputError("truncated weights file (its header is cut)", path=path)
        try:
            header = json.loads(fh.read(header_len))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise InputError("not a safetensors file (unreadable header)", path=path) from None
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__" and isinstance(t, dict)]
    if ends and 8 + header_len + max(ends) > size:
        raise InputError(f"truncated weights file ({size} bytes, its tensors need {8 + header_len + max(ends)})",
                         path=path)


def check_tokenizer_folder(path: str | Path) -> None:
    """A saved tokenizer needs ``tokenizer_config.json`` and its vocabulary (``tokenizer.json``, or the files
    of a slow tokenizer)."""
    path = Path(path)
    if not (path / "tokenizer_config.json").is_file():
        raise InputError("tokenizer files are missing (no tokenizer_config.json)", path=path)
    vocab = ("tokenizer.json", "tokenizer.model", "vocab.txt", "vocab.json", "spiece.model")
    if not any((path / name).is_file() for name in vocab):
        raise InputError(f"tokenizer files are missing (none of {', '.join(vocab)})", path=path)


@contextmanager
def loading(path: str | Path, what: str) -> Iterator[None]:
    """Turn the errors of a ``from_pretrained`` call (a missing or corrupt file, a repo that cannot be reached)
    into one :class:`InputError` naming ``path``."""
    try:
        yield
    except InputError:
        raise
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"cannot load the {what}: {message[:300]}", path=path) from None


LOGGER_PACKAGES = {"tensorboard": ("tensorboard", "tensorboard"), "wandb": ("wandb", "wandb")}
"""``report_to`` value → (module to import, package to install)."""


def check_report_to(report_to: str) -> None:
    """Fail before any model is loaded when the training logger the recipe names is not installed."""
    if report_to not in LOGGER_PACKAGES:
        return
    module, package = LOGGER_PACKAGES[report_to]
    try:
        __import__(module)
    except ImportError:
        raise InputError(f"logging.report_to={report_to} needs the {package} package (pip install {package}), or "
                         "set logging.report_to=none", field="logging.report_to") from None
