"""Recipe schema, YAML loading, key=value overrides and the `train --dry-run` CLI."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.recipes import apply_overrides, load_recipe, validate_recipe
from ragtruth_spans.training.recipe import Recipe
from ragtruth_spans.training.recipe_files import resolve_recipe_path, shipped_recipes

MINIMAL = {"model": {"name_or_path": "tiny"}, "output_dir": "runs/x"}


def write(tmp_path, data) -> str:
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


TOKEN_CLS_RECIPES = {"all-minilm-l6-v2/token-cls", "modernbert-large/token-cls",
                     "llama-3.1-8b-instruct/qlora-token-cls", "smollm2-135m-instruct/qlora-token-cls"}
BASELINE_RECIPES = {f"all-minilm-l6-v2/{name}" for name in ("similarity-cosine", "similarity-hybrid",
                                                             "similarity-keywords", "similarity-overlap", "two-tier")}


def test_every_shipped_recipe_validates():
    names = shipped_recipes()
    assert set(names) == {"tiny-cpu", "llama-2-13b/qlora", "llama-3.1-8b-instruct/qlora", "mistral-7b-instruct/qlora",
                          "qwen2.5-7b-instruct/qlora", "smollm2-135m-instruct/qlora", *TOKEN_CLS_RECIPES,
                          *BASELINE_RECIPES, "recommended-cpu", "recommended-cpu-member", "entailment-minilm",
                          "entailment-minilm-cpu", "entailment-minilm-rag"}
    for name in names:
        recipe = load_recipe(name)
        if name.startswith("entailment-minilm"):
            assert recipe.kind == "entailment"
            assert recipe.model.max_length == (128 if name == "entailment-minilm-cpu" else 256)
            continue
        assert isinstance(recipe, Recipe)
        if name.startswith("recommended-cpu"):
            assert recipe.kind == "stacked" and recipe.data.eval_split == "dev"
            assert [(m.recipe, m.refit) for m in recipe.members] == \
                ([("all-minilm-l6-v2/token-cls", False)] if name == "recommended-cpu-member" else [])
            continue
        if name in TOKEN_CLS_RECIPES:
            assert recipe.kind == "token-classification"
            continue
        if name in BASELINE_RECIPES:
            assert recipe.kind in {"similarity", "two-tier"}
            continue
        assert recipe.quantization.enabled and recipe.quantization.quant_type == "nf4"
    assert load_recipe("llama-2-13b/qlora").model.name_or_path == "meta-llama/Llama-2-13b-chat-hf"
    for name in ("smollm2-135m-instruct/qlora", "smollm2-135m-instruct/qlora-token-cls"):  # the packaged GGUF
        smol = load_recipe(name)
        assert smol.model.name_or_path == "smollm2-135m-instruct" and smol.quantization.quant_type == "nf4"
        assert not smol.training.bf16 and smol.quantization.compute_dtype == "float32"  # CPU-first


def test_token_classification_recipes():
    minilm = load_recipe("all-minilm-l6-v2/token-cls")
    assert minilm.model.name_or_path == "sentence-transformers/all-MiniLM-L6-v2" and minilm.finetuning == "full"
    assert minilm.data.max_length == 512 and minilm.data.eval_split == "dev"
    assert load_recipe("modernbert-large/token-cls").data.max_length == 4096
    qlora = load_recipe("llama-3.1-8b-instruct/qlora-token-cls")
    assert qlora.finetuning == "lora" and qlora.quantization.enabled and qlora.quantization.quant_type == "nf4"
    token_cls = {"kind": "token-classification", **MINIMAL}
    with pytest.raises(InputError, match="needs finetuning=lora"):
        validate_recipe({**token_cls, "quantization": {"enabled": True}})
    with pytest.raises(InputError, match="needs labels.scheme=typed"):
        validate_recipe({**token_cls, "detection": {"aggregation": "by-type"}})
    with pytest.raises(InputError, match=r"detection\.threshold: Input should be less than 1"):
        load_recipe("all-minilm-l6-v2/token-cls", ["detection.threshold=1.0"])


def test_unknown_key_is_named(tmp_path):
    bad = {**MINIMAL, "training": {"max_stepz": 3}}
    with pytest.raises(InputError, match=r"training\.max_stepz: unknown key"):
        load_recipe(write(tmp_path, bad))
    with pytest.raises(InputError, match=r"optimizer: unknown key"):
        validate_recipe({**MINIMAL, "optimizer": "adam"})


def test_wrong_type_is_named(tmp_path):
    bad = {**MINIMAL, "lora": {"r": "sixteen"}, "data": {"tasks": ["QA", "Chat"]}}
    with pytest.raises(InputError) as info:
        load_recipe(write(tmp_path, bad))
    message = str(info.value)
    assert "lora.r: Input should be a valid integer" in message
    assert "data.tasks.1:" in message and "r.yaml" in message


def test_missing_required_and_inconsistent_settings():
    with pytest.raises(InputError, match=r"output_dir: Field required"):
        validate_recipe({"model": {"name_or_path": "tiny"}})
    with pytest.raises(InputError, match="quant_storage=bfloat16 must equal model.dtype=float32"):
        validate_recipe({**MINIMAL, "model": {"name_or_path": "tiny", "dtype": "float32"},
                         "quantization": {"quant_storage": "bfloat16"}})


def test_overrides_parse_yaml_scalars():
    recipe = load_recipe("tiny-cpu", ["training.max_steps=20", "output_dir=runs/x", "training.learning_rate=1e-4",
                                      "data.tasks=[QA, Summary]", "quantization.enabled=false",
                                      "model.tiny.hidden_size=128"])
    assert recipe.training.max_steps == 20 and recipe.output_dir == "runs/x"
    assert recipe.training.learning_rate == pytest.approx(1e-4)
    assert recipe.data.tasks == ["QA", "Summary"]
    assert recipe.quantization.enabled is False and recipe.model.tiny.hidden_size == 128


def test_override_errors_name_the_key():
    with pytest.raises(InputError, match=r"unknown recipe key 'training\.max_stepz'"):
        load_recipe("tiny-cpu", ["training.max_stepz=3"])
    with pytest.raises(InputError, match=r"unknown recipe key 'trainig'"):
        apply_overrides({}, ["trainig.max_steps=3"])
    with pytest.raises(InputError, match="not of the form key=value"):
        apply_overrides({}, ["training.max_steps"])
    with pytest.raises(InputError, match=r"'output_dir' has no sub-keys"):
        apply_overrides({}, ["output_dir.x=1"])
    with pytest.raises(InputError, match=r"training\.max_steps: Input should be a valid integer"):
        load_recipe("tiny-cpu", ["training.max_steps=many"])


def test_resolve_recipe_path(tmp_path):
    path = write(tmp_path, MINIMAL)
    assert str(resolve_recipe_path(path)) == path
    assert resolve_recipe_path("tiny-cpu").name == "tiny-cpu.yaml"
    assert resolve_recipe_path("llama-3.1-8b-instruct/qlora.yaml").parent.name == "llama-3.1-8b-instruct"
    with pytest.raises(InputError, match="recipe not found: 'nope'"):
        resolve_recipe_path("nope")


def test_resolved_yaml_round_trips():
    recipe = load_recipe("qwen2.5-7b-instruct/qlora")
    assert validate_recipe(yaml.safe_load(recipe.to_yaml())) == recipe


def test_cli_dry_run_prints_resolved_recipe():
    result = CliRunner().invoke(app, ["train", "tiny-cpu", "--set", "training.max_steps=7", "--dry-run"])
    assert result.exit_code == 0, result.output
    resolved = yaml.safe_load(result.stdout)
    assert resolved["training"]["max_steps"] == 7 and resolved["quantization"]["quant_type"] == "nf4"


def test_cli_bad_override_is_a_clean_error():
    result = CliRunner().invoke(app, ["train", "tiny-cpu", "--set", "lora.rank=8", "--dry-run"])
    assert result.exit_code == 2
    assert "unknown recipe key 'lora.rank'" in result.output


def test_strict_values_the_trainer_would_reject(tmp_path):
    """Booleans are not numbers, flags are booleans, optimizers are transformers' own, output_dir is not empty."""
    for bad, message in (({"training": {"num_epochs": True}}, r"training\.num_epochs: expected float, got the boolean"),
                         ({"quantization": {"enabled": 1}}, r"quantization\.enabled: expected true or false"),
                         ({"training": {"optim": "adam_w"}}, r"training\.optim: unknown optimizer 'adam_w'"),
                         ({"output_dir": " "}, r"output_dir: must name a directory")):
        with pytest.raises(InputError, match=message):
            validate_recipe({**MINIMAL, **bad})
    with pytest.raises(InputError, match=r"output_dir: must name a directory"):
        load_recipe("tiny-cpu", ["output_dir="])
    assert load_recipe("tiny-cpu", ["training.optim=adafactor"]).training.optim == "adafactor"


def test_recipe_kind_defaults_to_generative_and_unknown_kinds_are_named(tmp_path):
    assert validate_recipe(MINIMAL).kind == "generative"
    with pytest.raises(InputError, match=r"unknown recipe kind 'magic' \(expected one of entailment, generative"):
        validate_recipe({**MINIMAL, "kind": "magic"})
    binary = tmp_path / "latin1.yaml"
    binary.write_bytes(b"model:\n  name_or_path: caf\xe9\n")
    with pytest.raises(InputError, match=r"latin1.yaml:2: not valid UTF-8"):
        load_recipe(binary)


def test_dotted_keys_reach_into_optional_sections():
    recipe = load_recipe("recommended-cpu", ["data.synth.documents=[a, b]", "data.synth.count=40"])
    assert recipe.data.synth.documents == ["a", "b"] and recipe.data.synth.count == 40
    assert recipe.data.synth.eval_count == 300  # the rest of the section as the recipe has it
    switched_on = load_recipe("tiny-cpu", ["data.augment.share=0.5"])  # tiny-cpu has no augment: defaults
    assert switched_on.data.augment is not None and switched_on.data.augment.share == 0.5
    with pytest.raises(InputError, match=r"unknown recipe key 'data\.synth\.cuont'"):
        load_recipe("recommended-cpu", ["data.synth.cuont=3"])
