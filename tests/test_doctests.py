"""Every public name (``ragtruth_spans.__all__``) has a runnable example in its docstring, and it runs (seqeval's
habit): the examples of a class or function are in its own docstring; the constants and ``__version__``, which
carry no docstring of their own, are shown in the package docstring. Examples check their output; files go to
a temporary folder (``tempfile`` points into pytest's)."""

from __future__ import annotations

import doctest
import tempfile
from pathlib import Path

import pytest

import ragtruth_spans

SHOWN_IN_PACKAGE_DOCSTRING = ("HALLUCINATION_TYPES", "TASK_TYPES", "__version__")
SLOW = {"detect"}
"""Examples that load the shipped detector (its sentence encoder: about 10 s on 2 cores)."""
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def examples_of(name: str) -> list[doctest.DocTest]:
    """The doctests of ``name``'s own docstring (not its methods'; the package's for the constants)."""
    obj = ragtruth_spans if name in SHOWN_IN_PACKAGE_DOCSTRING else getattr(ragtruth_spans, name)
    finder = doctest.DocTestFinder(recurse=False, exclude_empty=True)
    return [test for test in finder.find(obj, name, globs={}) if test.examples]


def run(tests: list[doctest.DocTest]) -> tuple[int, str]:
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report: list[str] = []
    for test in tests:
        runner.run(test, out=report.append)
    return runner.failures, "".join(report)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in ragtruth_spans.__all__])
def test_every_public_name_has_an_example_that_runs(name: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tests = examples_of(name)
    assert tests, f"{name}: no example in its docstring"
    if name in SHOWN_IN_PACKAGE_DOCSTRING:
        assert any(f"ragtruth_spans.{name}" in example.source for t in tests for example in t.examples), name
    failures, report = run(tests)
    assert failures == 0, report
