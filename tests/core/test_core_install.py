"""A core-only install (``pip install ragtruth-spans``, no extra) prepares data, evaluates a predictions file and
writes a report without torch; a command that needs an extra says which one in one line (exit 2). Simulated in a
subprocess where the extras' modules cannot be imported (.ci/run also checks a real core-only venv)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragtruth_spans.core import extras
from ragtruth_spans.core.errors import InputError

BLOCKED = sorted({m for modules in extras.EXTRA_MODULES.values() for m in modules} | {"tokenizers", "bitsandbytes"})

SCRIPT = textwrap.dedent('''
    import importlib.abc, importlib.util, json, sys
    BLOCKED = set(json.loads(sys.argv[1]))
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked: core-only install)")
    sys.meta_path.insert(0, Block())
    real = importlib.util.find_spec
    import ragtruth_spans.core.extras as extras
    extras.find_spec = lambda name: None if name.split(".")[0] in BLOCKED else real(name)
    from typer.testing import CliRunner
    from ragtruth_spans.cli import app
    runner = CliRunner()
    codes = {}
    for name, args in json.loads(sys.argv[2]):
        result = runner.invoke(app, args)
        codes[name] = [result.exit_code, result.output[-600:]]
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    print(json.dumps({"codes": codes, "heavy": heavy}))
''')


def test_core_only_install_prepares_evaluates_and_reports_without_torch(tmp_path: Path) -> None:
    data, pred = tmp_path / "data", tmp_path / "pred.jsonl"
    mine = tmp_path / "mine.jsonl"
    mine.write_text(json.dumps({"context": "Opened in 1999.", "response": "Opened in 1998.",
                                "spans": [{"start": 10, "end": 14}]}) + "\n", encoding="utf-8")
    commands = [
        ("import", ["import", "jsonl", "--in", str(mine), "--out", str(tmp_path / "mine"), "--split-by-source",
                    "train=1"]),
        ("prepare", ["prepare", "--sample", "--out", str(data)]),
        ("predict", ["--quiet", "predict", "--model", "flag-all", "--data", str(data / "test.jsonl"),
                     "--out", str(pred)]),
        ("evaluate", ["evaluate", "--gold", str(data / "test.jsonl"), "--pred", str(pred), "--json",
                      str(tmp_path / "report.json")]),
        ("report", ["report", "--gold", str(data / "test.jsonl"), "--pred", str(pred), "--out",
                    str(tmp_path / "report.html"), "--bootstrap", "50"]),
        ("needs-detect", ["predict", "--model", "sim-overlap", "--data", str(data / "test.jsonl"), "--out",
                          str(tmp_path / "sim.jsonl")]),
        ("needs-train", ["train", "tiny-cpu", "--set", f"output_dir={tmp_path / 'run'}"]),
    ]
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(BLOCKED), json.dumps(commands)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    codes = result["codes"]
    for name in ("import", "prepare", "predict", "evaluate", "report"):
        assert codes[name][0] == 0, (name, codes[name][1])
    assert json.loads((tmp_path / "report.json").read_text())["overall"]["responses"] > 0
    assert (tmp_path / "report.html").stat().st_size > 1000
    assert codes["needs-detect"][0] == 2 and "pip install 'ragtruth-spans[detect]'" in codes["needs-detect"][1]
    assert codes["needs-train"][0] == 2 and "pip install 'ragtruth-spans[train]'" in codes["needs-train"][1]
    assert result["heavy"] == []  # not even imported by accident


def test_require_names_the_extra_and_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extras, "find_spec", lambda name: None if name in {"trl", "datasets"} else object())
    with pytest.raises(InputError, match=r"training needs the 'train' extra \(trl, datasets not installed\): "
                                         r"pip install 'ragtruth-spans\[train\]'"):
        extras.require("train", "training")
    extras.require("serve", "serving")  # everything present: no error
    with pytest.raises(ValueError, match="unknown extra"):
        extras.require("gpu", "x")
