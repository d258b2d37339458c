"""GGUF files as base models: located, verified by SHA-256, converted once to a safetensors folder, recorded.

A GGUF file (llama.cpp's format; quantized weights, tokenizer and chat template in one file) is read by
``transformers`` (with the ``gguf`` package), which dequantizes its weights. Doing that on every run costs a
minute for a 135M model, so :func:`converted_model_dir` does it once into
``<cache>/gguf/<sha256>/`` (model + tokenizer as ``save_pretrained`` writes them, plus ``gguf_source.json``):
written to a temporary folder and renamed into place, so a half-written conversion is never used. The cache root
is ``$RAGTRUTH_SPANS_CACHE``, else ``$XDG_CACHE_HOME/ragtruth-spans``, else ``~/.cache/ragtruth-spans``.

The converted folder then loads like any local model (4-bit NF4 + LoRA, or in full): its weights are the GGUF's
dequantized values, so they carry the GGUF quantization's error. ``gguf_source.json`` (package, file, sha256,
quant type) goes into ``run_info.json`` as ``base_model.gguf``. Nothing here touches the network.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ragtruth_spans.core.cache import cache_root
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import file_sha256

SOURCE_FILE = "gguf_source.json"
"""The provenance record of a converted folder (also copied into ``run_info.json`` as ``base_model.gguf``)."""
GGUF_INSTALL = "pip install gguf"


@cache
def _memoised_sha256(path: Path, size: int, mtime_ns: int) -> str:
    digest = file_sha256(path)
    if digest is None:
        raise FileNotFoundError(path)
    return digest


def sha256_of(path: Path) -> str:
    """SHA-256 of a file, memoised per process by path, size and modification time (a GGUF is hashed once, not at
    every load)."""
    stat = path.stat()
    return _memoised_sha256(path.resolve(), stat.st_size, stat.st_mtime_ns)


@dataclass(frozen=True)
class GGUFSource:
    """A verified GGUF file: where it is, its SHA-256, and (for a packaged model) the package that ships it."""

    path: Path
    sha256: str
    package: str | None = None
    name: str | None = None  # the packaged model's name (``smollm2-135m-instruct``), None for a user's file


def require_gguf() -> None:
    """The ``gguf`` package reads GGUF files for transformers; without it, a one-line :class:`InputError`."""
    try:
        import gguf  # noqa: F401
    except ImportError:
        raise InputError(f"reading a GGUF base model needs the gguf package ({GGUF_INSTALL})",
                         field="model.gguf_file") from None


def check_gguf_file(path: Path) -> None:
    """A GGUF file must exist, start with the ``GGUF`` magic and (when the ``gguf`` package is installed) have a
    header, metadata and tensor table that parse; anything else is an :class:`InputError`."""
    if not path.is_file():
        raise InputError("GGUF file not found", path=path, field="model.gguf_file")
    with path.open("rb") as fh:
        if fh.read(4) != b"GGUF":
            raise InputError("not a GGUF file (it does not start with the GGUF magic)", path=path,
                             field="model.gguf_file")
    try:
        import gguf  # noqa: F401
    except ImportError:
        return  # the conversion needs it and says so (require_gguf)
    read_gguf(path)


def read_gguf(path: Path) -> Any:
    """``gguf.GGUFReader`` of ``path``; a file that has the magic but not the structure (cut, bogus counts or
    offsets, unknown version) is one :class:`InputError`, never a ``struct.error`` or ``IndexError`` traceback."""
    from gguf import GGUFReader

    try:
        return GGUFReader(str(path))
    except MemoryError:
        raise InputError("not a valid GGUF file (its header asks for more memory than there is)", path=path,
                         field="model.gguf_file") from None
    except Exception as exc:  # the reader indexes the raw bytes: anything can go wrong on a damaged file
        message = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise InputError(f"not a valid GGUF file ({type(exc).__name__}: {message})", path=path,
                         field="model.gguf_file") from None


def local_gguf(name_or_path: str, gguf_file: str) -> GGUFSource:
    """The user's GGUF ``gguf_file``: an absolute path or a path relative to the folder ``name_or_path``
    (``from_pretrained(folder, gguf_file=...)``'s convention); checked and hashed."""
    path = Path(gguf_file).expanduser()
    if not path.is_absolute():
        path = Path(name_or_path).expanduser() / path
    check_gguf_file(path)
    return GGUFSource(path=path, sha256=sha256_of(path))


def quant_type(path: Path) -> str:
    """The GGUF's quantization (``general.file_type``, e.g. ``Q4_1``); when the file does not say, the most
    common type of its 2-D tensors."""
    from collections import Counter

    from gguf import LlamaFileType

    reader = read_gguf(path)
    field = reader.fields.get("general.file_type")
    if field is not None and field.data:
        value = int(field.parts[field.data[0]][0])
        try:
            return LlamaFileType(value).name.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            pass
    counts = Counter(t.tensor_type.name for t in reader.tensors if len(t.shape) > 1)
    return counts.most_common(1)[0][0] if counts else "unknown"


def converted_model_dir(source: GGUFSource) -> Path:
    """``<cache>/gguf/<sha256>``: the GGUF converted to a safetensors model + tokenizer folder (done once; a
    finished folder is reused, keyed by the file's SHA-256)."""
    final = cache_root() / "gguf" / source.sha256
    if (final / SOURCE_FILE).is_file():
        return final
    require_gguf()
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{source.sha256[:16]}-", dir=final.parent))
    try:
        _convert(source, tmp)
        tmp.chmod(0o755)  # mkdtemp makes it private
        try:
            os.rename(tmp, final)
        except OSError:  # another process finished first (final exists and is not empty)
            if not (final / SOURCE_FILE).is_file():
                raise InputError(f"the cache folder exists but holds no {SOURCE_FILE} (an incomplete "
                                 "conversion from another tool?): delete it and run again", path=final) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _convert(source: GGUFSource, out: Path) -> None:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(source.path.parent), source.path.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                     local_files_only=True)
    except (OSError, ValueError, RuntimeError, KeyError, TypeError, IndexError, struct.error) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"cannot convert the GGUF file: {message[:300]}", path=source.path,
                         field="model.gguf_file") from None
    # The loaded config says quant_method=gguf; the saved folder holds plain (dequantized) weights.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if tokenizer.pad_token_id is not None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.to(torch.bfloat16).save_pretrained(out)  # half the disk of float32; NF4 loading rounds far more
    tokenizer.save_pretrained(out)
    record = {**provenance_of(source), "transformers": transformers.__version__, "saved_dtype": "bfloat16"}
    (out / SOURCE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def provenance_of(source: GGUFSource) -> dict[str, Any]:
    """What ``run_info.json`` records about a GGUF base: package, model name, file, sha256, quant type."""
    record = asdict(source)
    return {"package": record["package"], "name": record["name"], "file": source.path.name,
            "sha256": source.sha256, "quantized": quant_type(source.path)}


def gguf_provenance(base_path: str | Path) -> dict[str, Any] | None:
    """The ``gguf_source.json`` of a converted base folder, or None for a base that is not a converted GGUF."""
    record = Path(base_path) / SOURCE_FILE
    if not record.is_file():
        return None
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not readable JSON ({exc})", path=record) from None
    return data if isinstance(data, dict) else None


def gguf_record(base_path: str | Path) -> dict[str, Any]:
    """``{"gguf": provenance}`` for ``run_info.json``'s ``base_model`` when the base is a converted GGUF (the
    figures of such a run carry the GGUF quantization's error), else ``{}``."""
    record = gguf_provenance(base_path)
    return {"gguf": record} if record else {}
