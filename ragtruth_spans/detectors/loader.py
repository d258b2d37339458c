"""The one loader: ``load_detector(path_or_name, **options)`` → a :class:`~ragtruth_spans.detectors.base.Detector`.

- A **run directory** (what ``ragtruth-spans train`` wrote): first verified against its manifest
  (:func:`~ragtruth_spans.runs.manifest.verify_run`: a changed or missing file, or an edited ``run_info.json``,
  is an error naming the file), then its ``kind`` is read from ``run_info.json`` (runs written before kinds existed
  are generative) and the family of that kind loads it. All of it under the run's shared lock
  (:func:`~ragtruth_spans.core.locks.shared_reading`), the lock ``train`` holds while it writes the run: a run
  being written is one error naming the writer, and ``train --overwrite`` waits for a load in progress.
- A **name** of a detector that needs no training (``numbers``, ``flag-all``, ``flag-none``, ...): built by the
  family that offers it.
- **Nothing**, or the name ``default``: the detector that ships inside the package
  (:mod:`ragtruth_spans.detectors.shipped`, a run directory verified like any other). A directory named
  ``default`` that exists is a run directory, as before.

``options`` go to the family (e.g. ``device``, ``batch_size``, ``backend`` for the generative family); options
given as None are left out, so a command line can pass its unset flags through. An option the family does not
take is an :class:`~ragtruth_spans.core.errors.InputError`. Every front (command line, benchmark, HTTP, Python)
builds them as one :class:`~ragtruth_spans.detectors.options.DetectorOptions`:
``load_detector(path, **options.load_kwargs())``.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.extras import require
from ragtruth_spans.core.locks import shared_reading
from ragtruth_spans.detectors.base import Detector
from ragtruth_spans.detectors.family import get_family, named_detectors
from ragtruth_spans.detectors.shipped import DEFAULT_DIR, DEFAULT_NAME, is_default, resolve_detector
from ragtruth_spans.runs.manifest import verify_run
from ragtruth_spans.runs.run_dir import run_kind


def load_detector(path_or_name: str | Path | None = None, **options: Any) -> Detector:
    """The detector saved in a run directory, the named detector, or without an argument (or ``"default"``) the
    shipped one (see the module docstring); it remembers the options it was loaded with
    (``detector.load_options``, part of its operating point). The host program's logging, environment and the
    libraries' loggers are left as they are (the command line quietens the libraries for itself).

    >>> from ragtruth_spans import load_detector
    >>> detector = load_detector("numbers")  # a rule-based detector: no weights
    >>> found = detector.detect(context="The hotel opened in 1999 and has 120 rooms.",
    ...                         response="The hotel opened in 1998 and has 120 rooms.", task="Summary")
    >>> [(s.start, s.end, s.type) for s in found.spans]
    [(20, 24, 'Evident Conflict')]
    """
    options = {key: value for key, value in options.items() if value is not None}
    if is_default(path_or_name) and not DEFAULT_DIR.is_dir():
        raise InputError("the shipped detector is missing from this installation: reinstall ragtruth-spans, or "
                         "rebuild it with scripts/build_default_detector.py", path=DEFAULT_DIR)
    detector = _load(resolve_detector(path_or_name), options)
    detector.load_options = MappingProxyType(dict(options))
    return detector


def _load(path_or_name: str | Path, options: dict[str, Any]) -> Detector:
    path = Path(path_or_name)
    if path.is_dir():
        with shared_reading(path):  # the lock train takes: never a run half-deleted by train --overwrite
            verify_run(path)
            family = get_family(run_kind(path))
            if family.load is None:
                raise InputError(f"detectors of kind {family.kind!r} are not loaded from a directory", path=path)
            if family.extra:
                require(family.extra, f"a {family.kind} detector")
            return family.load(path, **options)
    named = named_detectors()
    if str(path_or_name) in named:
        family, factory = named[str(path_or_name)]
        if family.extra:
            require(family.extra, f"the {path_or_name} detector")
        return factory(**options)
    names = ", ".join(sorted([*named, DEFAULT_NAME]))
    raise InputError(f"neither a run directory nor a detector name (names: {names})", path=path)
