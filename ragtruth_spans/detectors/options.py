"""The one model of a detector's load options and the one ``KEY=VALUE`` parser.

:class:`DetectorOptions` holds what :func:`~ragtruth_spans.detectors.loader.load_detector` takes besides the run
directory or name: the shared load flags (``device``, ``batch_size``, ``threshold``, ``backend``,
``max_new_tokens``, ``load_in_4bit``, ``aggregation``), typed and checked here, and any family option (an
llm-judge's ``base_url``, ``model``, ``extra_body``, ...), which the family types and checks when it loads. It is
built the same way from every front:

- the command line: the load flags plus ``--option KEY=VALUE`` items (:meth:`DetectorOptions.from_command_line`);
- a benchmark's ``NAME[KEY=VALUE,...]`` (:meth:`DetectorOptions.from_items`, ``flag="--detectors"``);
- JSON, as an HTTP client reads it back from ``GET /v1/model`` (:meth:`DetectorOptions.of`);
- Python: ``DetectorOptions(threshold=0.4)``, then ``load_detector(path, **options.load_kwargs())``.

:func:`parse_key_values` is the one ``KEY=VALUE`` parser: values are YAML (``0.5``, ``true``, ``[a, b]``), a dotted
key nests (``extra_body.top_k=5`` → ``{"extra_body": {"top_k": 5}}``) and a key given twice is refused. Every
error is one :class:`~ragtruth_spans.core.errors.InputError` line naming the flag and the key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ragtruth_spans.core.errors import InputError

LOAD_FLAGS = ("device", "batch_size", "threshold", "backend", "max_new_tokens", "load_in_4bit", "aggregation",
              "runtime")
"""The shared load options that have a flag of their own (``--batch-size`` for ``batch_size``, ...); any other
option is given as ``--option KEY=VALUE``."""


def parse_key_values(items: Iterable[str] | None, *, flag: str = "--option") -> dict[str, Any]:
    """``KEY=VALUE`` items → a dict. Values are YAML (quote a string that YAML would read otherwise); a dotted key
    sets a nested mapping (``extra_body.top_k=20`` → ``{"extra_body": {"top_k": 20}}``). An item without ``=``,
    a value that is not YAML, or a key given twice is an :class:`InputError` naming ``flag`` and the key.

    >>> parse_key_values(["extra_body.top_k=5", "extra_body.stop=[a, b]", "mode=claims"])
    {'extra_body': {'top_k': 5, 'stop': ['a', 'b']}, 'mode': 'claims'}
    >>> parse_key_values(["threshold=0.3", "threshold=0.4"])
    Traceback (most recent call last):
    ragtruth_spans.core.errors.InputError: field '--option': --option 'threshold=0.4': threshold is given twice
    """
    from ragtruth_spans.training.recipe_files import parse_override

    options: dict[str, Any] = {}
    for item in items or []:
        keys, value = parse_override(item, flag=flag)
        node = options
        for depth, key in enumerate(keys[:-1]):
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise InputError(f"{flag} {item!r}: {'.'.join(keys[:depth + 1])} is already a value, not a mapping",
                                 field=flag)
        if keys[-1] in node:
            raise InputError(f"{flag} {item!r}: {'.'.join(keys)} is given twice", field=flag)
        node[keys[-1]] = value
    return options


def _in_open_unit(value: float) -> float:
    if not 0 < value < 1:
        raise ValueError("must be in (0, 1) (0 and 1 excluded)")
    return value


Threshold = Annotated[float, AfterValidator(_in_open_unit)]
"""The rule of the ``threshold`` load option: a number strictly between 0 and 1 (the loader itself, from Python,
also takes 0, which flags everything)."""


class DetectorOptions(BaseModel):
    """A detector's load options (see the module docstring); unset ones are None, which the loader leaves out.
    Family options are kept as given (``model_extra``) for the family to check.

    >>> options = DetectorOptions.from_items(["threshold=0.4", "extra_body.top_k=5"])
    >>> options.load_kwargs()
    {'threshold': 0.4, 'extra_body': {'top_k': 5}}
    >>> options == DetectorOptions.of({"threshold": 0.4, "extra_body": {"top_k": 5}})  # e.g. JSON over HTTP
    True
    >>> DetectorOptions.from_items(["batch_size=many"], flag="--detectors")
    Traceback (most recent call last):
    ragtruth_spans.core.errors.InputError: field '--detectors': batch_size='many': Input should be a valid integer
    """

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    device: str | None = Field(None, description="torch device: cpu, cuda, cuda:1 ...")
    batch_size: Annotated[int, Field(ge=1)] | None = Field(None, description="What runs together in one pass.")
    threshold: Threshold | None = Field(None, description="The operating point, in (0, 1).")
    backend: str | None = Field(None, description="Generative runs: hf or vllm.")
    max_new_tokens: Annotated[int, Field(ge=1)] | None = Field(None, description="Generation budget.")
    load_in_4bit: bool | None = Field(None, description="4-bit quantization of the base model.")
    aggregation: str | None = Field(None, description="Token classification: how windows combine.")
    runtime: str | None = Field(None, description="Where the transformer runs (stacked: the sentence encoder, auto, "
                                "onnx-fp32, onnx-int8 or torch; entailment: the NLI model, torch, onnx-fp32 or "
                                "onnx-int8).")

    @classmethod
    def of(cls, options: Mapping[str, Any] | None, *, flag: str = "options") -> DetectorOptions:
        """The options in a mapping (a JSON object, a dict from Python or from :func:`parse_key_values`); a value
        of the wrong type is an :class:`InputError` naming ``flag`` and the key, on one line."""
        options = dict(options or {})
        try:
            return cls.model_validate(options)
        except ValidationError as exc:
            error = exc.errors()[0]
            key = ".".join(str(part) for part in error["loc"]) or "options"
            given = options.get(str(error["loc"][0])) if error["loc"] else None
            message = error["msg"].removeprefix("Value error, ")
            if flag == "--" + key.replace("_", "-"):  # the flag of this key: it names the key already
                raise InputError(f"{message}, got {given!r}", field=flag) from None
            raise InputError(f"{key}={given!r}: {message}", field=flag) from None

    @classmethod
    def from_items(cls, items: Iterable[str] | None, *, flag: str = "--option") -> DetectorOptions:
        """The options of ``KEY=VALUE`` items (:func:`parse_key_values`)."""
        return cls.of(parse_key_values(items, flag=flag), flag=flag)

    @classmethod
    def from_command_line(cls, flags: Mapping[str, Any], items: Iterable[str] | None) -> DetectorOptions:
        """The options of the load flags (``{"batch_size": 8, "device": None, ...}``, unset ones None) and the
        ``--option KEY=VALUE`` items; a key given both as a flag and as ``--option`` is an :class:`InputError`."""
        given = parse_key_values(items, flag="--option")
        both = sorted(key for key in given if flags.get(key) is not None)
        if both:
            raise InputError(f"{', '.join(both)} given both as a flag and as --option; keep one", field="--option")
        set_flags = {key: value for key, value in flags.items() if value is not None}
        for key, value in set_flags.items():  # a bad flag value names the flag itself
            cls.of({key: value}, flag="--" + key.replace("_", "-"))
        return cls.of({**set_flags, **given}, flag="--option")

    def over(self, base: DetectorOptions) -> DetectorOptions:
        """These options over ``base``: a key set here wins (a benchmark detector's own options over the
        command's load flags)."""
        return DetectorOptions.of({**base.load_kwargs(), **self.load_kwargs()})

    def load_kwargs(self) -> dict[str, Any]:
        """The options for ``load_detector(path, **options)``: the set ones only, family options included."""
        return {key: value for key, value in {**dict(self), **(self.model_extra or {})}.items() if value is not None}
