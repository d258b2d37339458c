"""The stacked family's recipe: which features and members, the combiner's settings, how decisions are tuned.

```yaml
kind: stacked
features:
  encoder: sentence-transformers/all-MiniLM-L6-v2   # sentence similarity column; null: none
members:                                            # optional: detectors whose scores become columns
  - name: minilm
    recipe: all-minilm-l6-v2/token-cls             # trained here, out-of-fold on the training split
    overrides: [training.num_epochs=3]
    folds: 2
    refit: true                                     # false: detect with the mean of the fold models
  - name: numbers
    detector: numbers                               # a named detector (nothing to train)
  - name: nli
    detector: runs/nli                              # a run directory, loaded with load_detector's options
    options: {runtime: onnx-int8, windows: 1}
combiner: {learning_rate: 0.05, num_leaves: 31, ...}  # LightGBM
decision: {per_task: true, max_word_gap: [0, 1, 2], ...}
```
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from ragtruth_spans.models.pretrained import MINILM
from ragtruth_spans.training.data_recipe import DataSection
from ragtruth_spans.training.recipe import Recipe, check_eval_split
from ragtruth_spans.training.sections import Section

logger = logging.getLogger(__name__)

RETIRED: dict[str, dict[str, Any]] = {
    "features": {"lm": None},
    "combiner": {"monotone": False, "supported_positive_weight": 1.0, "additive_priors": False},
    "decision": {"balanced": False},
}
"""Options removed because they measured no gain (causal-LM support columns, monotone constraints, additive
priors, a lower weight for copied words of a labelled phrase, tuning balanced between real and generated
responses), each with the value that gives the behaviour kept. A recipe or a run's ``recipe.yaml`` that sets one
to that value loads as before (the key is dropped: the run was trained without it); any other value is refused
with the option's name, since this version cannot reproduce that run."""


def drop_retired(section: str, data: Any) -> Any:
    """``data`` (a section's raw mapping) without the :data:`RETIRED` keys of ``section`` set to their kept value;
    one set to another value is a ``ValueError`` naming it.

    >>> drop_retired("combiner", {"num_leaves": 7, "monotone": False})
    {'num_leaves': 7}
    >>> drop_retired("combiner", {"monotone": True})
    Traceback (most recent call last):
    ...
    ValueError: monotone was removed (it measured no gain); only false, the kept behaviour, loads: retrain without it
    """
    if not isinstance(data, dict):
        return data
    kept = {key: value for key, value in RETIRED[section].items() if key in data}
    for key, value in kept.items():
        given = data[key]
        same = given is value if value is None or isinstance(value, bool) else \
            not isinstance(given, bool) and isinstance(given, (int, float)) and given == value
        if not same:
            shown = {None: "null", False: "false"}.get(value, value) if not isinstance(value, float) else value
            raise ValueError(f"{key} was removed (it measured no gain); only {shown}, the kept behaviour, loads: "
                             "retrain without it")
        logger.debug("recipe: %s.%s: %r is the only behaviour now; the key is dropped", section, key, given)
    return {key: value for key, value in data.items() if key not in kept}


class FeatureSection(Section):
    encoder: str | None = Field(MINILM, description="Sentence-transformers model whose response-sentence to best "
                                                     "context-unit cosine is a feature; null leaves it at 0.")
    token_support: bool = Field(False, description="With an encoder: per-word soft support from its contextual "
                                "token embeddings (each word piece's best cosine with the context's tokens), "
                                "robust to paraphrase; one more encoder pass over responses and contexts.")
    precision: Literal["fp32", "int8"] = Field("fp32", description="The sentence encoder's weights the features "
                                               "are computed with: fp32 (torch or ONNX Runtime, equal to ~1e-5) or "
                                               "int8 (ONNX Runtime, dynamically quantized: faster, embeddings at "
                                               "cosine ~0.99 of fp32's). The detector loads on the same by default.")
    encoder_layers: int | None = Field(None, ge=1, description="Run only the encoder's first N transformer layers "
                                       "(null: all): a new context costs about N/6 of all-MiniLM-L6-v2's pass; "
                                       "the features are then the cut encoder's own (docs/lab/NOTEBOOK.md).")
    drop: list[str] = Field(default_factory=list, description="Base feature columns held at 0 (LightGBM "
                            "then never splits on them), e.g. the lengths and positions that encode one data "
                            "set's habits: [word_position, sentence_position, log_response_words, ...].")

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, data: Any) -> Any:
        return drop_retired("features", data)

    @model_serializer(mode="wrap")
    def _fp32_unsaid(self, handler: Any) -> Any:
        """fp32 features of every layer are left unsaid: the recipes and run files written before int8 ones and
        cut encoders stay as they were."""
        data = handler(self)
        if isinstance(data, dict) and data.get("precision") == "fp32":
            data.pop("precision")
        if isinstance(data, dict) and data.get("encoder_layers") is None:
            data.pop("encoder_layers", None)
        return data

    @model_validator(mode="after")
    def _layers_of_an_encoder(self) -> FeatureSection:
        if self.encoder_layers is not None and self.encoder is None:
            raise ValueError("encoder_layers needs an encoder (features.encoder is null)")
        return self

    @field_validator("drop")
    @classmethod
    def _known_columns(cls, value: list[str]) -> list[str]:
        from ragtruth_spans.detectors.stacked.features import BASE_FEATURES

        unknown = sorted(set(value) - set(BASE_FEATURES))
        if unknown:
            raise ValueError(f"unknown column(s) {unknown}; the base columns: {list(BASE_FEATURES)}")
        return value


MEMBERS_DIR = "members"
"""Where a stacked run keeps the members it trains (``members/<name>/{fold-k,full}``)."""


class MemberSection(Section):
    """A detector whose per-character scores become columns: trained from ``recipe`` (out-of-fold over ``folds``
    source-disjoint parts of the training split, then on all of it), or the named/run-directory ``detector``."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Column prefix and folder name of the member.")
    recipe: str | None = Field(None, description="Recipe (shipped name or file) of a member trained here.")
    overrides: list[str] = Field(default_factory=list, description="key=value overrides of the member recipe.")
    folds: int = Field(2, ge=2, le=10, description="Source-disjoint folds of the out-of-fold member scores.")
    refit: bool = Field(True, description="Train the member once more on the whole training split for the eval "
                                          "split and detection (true), or use the mean of its fold models' scores "
                                          "there (false: no extra training; detection runs every fold model).")
    detector: str | None = Field(None, description="A detector name or run directory used as it is. Its scores "
                                                   "on the training split must not come from training on it.")
    options: dict[str, Any] = Field(default_factory=dict, description="Options of load_detector for the member "
                                                                      "named by detector (e.g. runtime, windows).")

    def run_paths(self) -> list[str]:
        """The run folders (relative to the stacked run) detection loads for a member trained here:
        ``members/<name>/full``, or without ``refit`` every ``members/<name>/fold-k``."""
        if self.refit:
            return [f"{MEMBERS_DIR}/{self.name}/full"]
        return [f"{MEMBERS_DIR}/{self.name}/fold-{k}" for k in range(self.folds)]

    @model_validator(mode="after")
    def _one_source(self) -> MemberSection:
        if (self.recipe is None) == (self.detector is None):
            raise ValueError("a member names exactly one of recipe (trained here) or detector (used as it is)")
        if self.options and self.detector is None:
            raise ValueError("options are load_detector's options of a member named by detector; a member trained "
                             "here takes overrides")
        return self


class CombinerSection(Section):
    """LightGBM binary classifier over word features (early stopping on ``data.eval_split``)."""

    learning_rate: float = Field(0.05, gt=0, le=1)
    num_leaves: int = Field(31, ge=2)
    min_data_in_leaf: int = Field(50, ge=1)
    feature_fraction: float = Field(0.8, gt=0, le=1)
    bagging_fraction: float = Field(0.8, gt=0, le=1)
    lambda_l2: float = Field(1.0, ge=0)
    max_rounds: int = Field(1000, ge=1)
    early_stopping_rounds: int = Field(50, ge=1)
    oof_folds: int = Field(5, ge=2, le=20, description="Source-disjoint folds of the training split whose "
                                                        "out-of-fold probabilities join the dev split in tuning.")
    seed: int = 0
    seeds: int = Field(1, ge=1, le=10, description="Boosters trained with seeds seed, seed + 1, ... whose word "
                                                   "probabilities are averaged (1: one booster).")

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, data: Any) -> Any:
        return drop_retired("combiner", data)


class DecisionSection(Section):
    """Word probabilities → spans: flagged words (probability ≥ threshold) merge into spans across at most
    ``max_word_gap`` unflagged words; thresholds (one, or one per task) and the gap are tuned for span F1, then a
    response gate for response F1 (within ``gate_span_f1_tolerance`` of that span F1), on the out-of-fold
    training probabilities together with the eval split."""

    per_task: bool = True
    max_word_gap: list[int] = Field(default_factory=lambda: [0, 1, 2], min_length=1,
                                    description="Candidate gaps, in unflagged words, merged inside one span.")
    grid: list[float] = Field(default_factory=lambda: [round(0.025 * i, 3) for i in range(2, 38)], min_length=1)
    criterion: Literal["span_f1"] = "span_f1"
    gate_span_f1_tolerance: float = Field(0.005, ge=0.0, le=1.0, description="The response gate (no span for a "
                                          "response whose score is below it) and the fill are tuned for response "
                                          "F1 among those that cost at most this much span F1.")
    gate_threshold_scales: list[float] = Field(default_factory=lambda: [1.0], min_length=1, description="With the "
                                               "gate, the word thresholds may be scaled by one of these (a gate "
                                               "that drops clean responses lets the others flag more words).")
    conflict_rule: bool = Field(False, description="Words the context contradicts (a changed number or name, an "
                                "antonym, a negation added or dropped in copied text: the conflict columns) are "
                                "always flagged; the gate and fill are tuned with the rule in place.")
    fill: list[float | None] = Field(default_factory=lambda: [None], min_length=1, description="Candidate fills: "
                                     "a response that passes the gate but has no word at the threshold gets its "
                                     "words at or above fill × its highest word probability (null: none).")

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, data: Any) -> Any:
        return drop_retired("decision", data)

    @model_validator(mode="after")
    def _valid(self) -> DecisionSection:
        if any(not 0.0 < v < 1.0 for v in self.grid):
            raise ValueError("decision.grid values must be strictly between 0 and 1")
        if any(g < 0 for g in self.max_word_gap):
            raise ValueError("decision.max_word_gap values must be >= 0")
        if any(not 0.0 < v <= 2.0 for v in self.gate_threshold_scales):
            raise ValueError("decision.gate_threshold_scales values must be in (0, 2]")
        if any(f is not None and not 0.0 < f <= 1.0 for f in self.fill):
            raise ValueError("decision.fill values must be null or in (0, 1]")
        return self


class ResponseSection(Section):
    """The response head (docs/STACKED.md): LightGBM over per-response aggregates of the out-of-fold word
    probabilities and features, rounds chosen by source-disjoint cross-validation, Platt-calibrated; its
    probability is the response score, the gate and what selection ranks by."""

    augmented: bool = Field(True, description="Train the head on the augmented responses too (they teach it "
                                              "obvious edits); calibration and tuning use real responses only.")
    extra: bool = Field(False, description="Train the head on data.extra's training-only responses too (their "
                                           "out-of-fold word probabilities); never calibrated or tuned on.")
    learning_rate: float = Field(0.02, gt=0, le=1)
    num_leaves: int = Field(4, ge=2)
    min_data_in_leaf: int = Field(40, ge=1)
    feature_fraction: float = Field(0.7, gt=0, le=1)
    lambda_l2: float = Field(5.0, ge=0)
    max_rounds: int = Field(1000, ge=1)
    early_stopping_rounds: int = Field(50, ge=1)
    folds: int = Field(5, ge=2, le=20, description="Source-disjoint folds of the head's cross-validation.")
    seed: int = 0


class StackedRecipe(Recipe):
    """``kind: stacked`` — word-level gradient boosting over support features and members' scores."""

    kind: Literal["stacked"] = "stacked"
    reads: ClassVar[Mapping[str, frozenset[str]]] = {"data": frozenset(DataSection.model_fields) - {"max_length"}}
    """Words are not tokens: the stacked family has no token budget (``data.max_length``)."""
    features: FeatureSection = Field(default_factory=FeatureSection)
    members: list[MemberSection] = Field(default_factory=list)
    combiner: CombinerSection = Field(default_factory=CombinerSection)
    decision: DecisionSection = Field(default_factory=DecisionSection)
    response: ResponseSection | None = Field(default_factory=ResponseSection, description="The response head; "
                                             "null: the response score is the highest word probability.")

    @model_validator(mode="after")
    def _checks(self) -> StackedRecipe:
        check_eval_split(self, "used for early stopping and tuning")
        names = [m.name for m in self.members]
        if len(names) != len(set(names)):
            raise ValueError("members: every member needs its own name")
        return self
