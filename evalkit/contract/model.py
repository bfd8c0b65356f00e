"""The evaluation contract: the rules fixed before tuning, as a strict pydantic model.

A contract says how a raw model output becomes a structured answer (``output``),
which predicted keys are compared with which gold columns and how (``fields``),
what counts as a correct example (``correct``), which classes are rare, which
slices to watch and which gate a candidate must pass. Unknown keys are errors,
never ignored: a misspelt rule that is silently skipped would change a number
without anyone noticing. The JSON Schema of this model is committed as
``contracts/contract.schema.json``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, model_validator
from pydantic_core import PydanticCustomError

from evalkit.contract.matchers import MATCHERS, matcher_names
from evalkit.contract.tool_names import (
    ARGUMENT_PREFIX,
    FUNCTION_CLASS,
    NAME_FIELD,
    SYNTAX_CHOICES,
)
from evalkit.records import GateRules

Fraction = Field(default=None, ge=0.0, le=1.0)
# With gold_answer and parse: label, the key that holds the reference label.
LABEL_KEY = "label"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True
    )


class OutputSpec(_Strict):
    """How a raw output is turned into a structured answer (its *format*)."""

    parse: Literal["json", "label", "tool_calls"] = "json"
    """``json``: the output holds a JSON value checked against ``schema``;
    ``label``: the whole output is one of ``labels``; ``tool_calls``: the output
    is one or more calls of the row's tools (docs/contracts.md, "Function calling")."""
    extract: Literal["strict", "lenient"] = "lenient"
    """``strict``: the whole output (trimmed) is the JSON or the exact label;
    ``lenient``: JSON may sit inside ``` fences or prose (the first complete
    object counts), and a label may differ in case, width, whitespace, quotes
    and trailing punctuation."""
    labels: list[str] | None = None
    """``parse: label`` only: the allowed labels, each written as gold writes it."""
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    """``parse: json`` only: JSON Schema (2020-12 unless ``$schema`` says otherwise)
    that a format-valid output satisfies. Default: ``{type: object}``."""
    schema_file: str | None = None
    """Instead of ``schema``: a JSON or YAML file with the schema, relative to the
    contract file. The normalised contract holds the schema inline."""
    tools: str | list[dict[str, Any]] | None = None
    """``parse: tool_calls`` only: the gold column holding each row's tools (an OpenAI
    function list, or its JSON text), or that list itself for every row."""
    tools_file: str | None = None
    """Instead of ``tools``: a JSON or YAML file with one function list for every row,
    relative to the contract file. The normalised contract holds the list inline."""
    calls: Literal["set", "ordered", "one"] | None = None
    """``parse: tool_calls`` only: ``set`` (default): the calls match the gold calls as
    a multiset, order ignored (parallel calls); ``ordered``: in order; ``one``: exactly
    one call (more is ``wrong_call_count``)."""
    syntax: str | None = None
    """``parse: tool_calls`` only: where calls are found in an output: ``auto`` (default:
    structured calls when the prediction has them, else each text syntax in a fixed
    order), ``structured`` (``message.tool_calls`` or a ``tool_calls`` field), or one
    text syntax: ``qwen``/``hermes``, ``llama3``, ``mistral``, ``json``."""

    @model_validator(mode="before")
    @classmethod
    def _explicit_defaults(cls, data: Any) -> Any:
        # The normalised contract spells out every default that decides a verdict.
        if isinstance(data, dict) and data.get("parse") == "tool_calls":
            data = dict(data)
            if data.get("calls") is None:
                data["calls"] = "set"
            if data.get("syntax") is None:
                data["syntax"] = "auto"
        return data

    @model_validator(mode="after")
    def _check_parse_mode(self) -> OutputSpec:
        tool_keys = [
            key
            for key, value in (
                ("tools", self.tools),
                ("tools_file", self.tools_file),
                ("calls", self.calls),
                ("syntax", self.syntax),
            )
            if value is not None
        ]
        if self.parse == "tool_calls":
            return self._check_tool_calls()
        if tool_keys:
            raise ValueError(f"{tool_keys[0]!r} is for parse: tool_calls")
        if self.parse == "label":
            if not self.labels:
                raise ValueError("parse: label needs a non-empty list 'labels'")
            if len(set(self.labels)) != len(self.labels):
                raise ValueError("labels must be unique")
            if self.json_schema is not None or self.schema_file is not None:
                raise ValueError("parse: label takes no 'schema' or 'schema_file'")
        elif self.labels is not None:
            raise ValueError("'labels' is for parse: label; use 'schema' with parse: json")
        if self.json_schema is not None and self.schema_file is not None:
            raise ValueError("give either 'schema' or 'schema_file', not both")
        return self

    def _check_tool_calls(self) -> OutputSpec:
        if self.labels is not None:
            raise ValueError("'labels' is for parse: label")
        if "extract" in self.model_fields_set:
            raise ValueError(
                "'extract' is for parse: json and label; with parse: tool_calls, 'syntax' "
                "says where calls are found"
            )
        if self.json_schema is not None or self.schema_file is not None:
            raise ValueError(
                "parse: tool_calls takes no 'schema' or 'schema_file': each call's arguments "
                "are checked against its tool's parameters (output.tools)"
            )
        if self.tools is None and self.tools_file is None:
            raise ValueError(
                "parse: tool_calls needs the row's tools: 'tools' (a gold column, or the "
                "function list) or 'tools_file'"
            )
        if self.tools is not None and self.tools_file is not None:
            raise ValueError("give either 'tools' or 'tools_file', not both")
        if self.syntax is not None and self.syntax not in SYNTAX_CHOICES:
            raise ValueError(f"syntax {self.syntax!r} is not one of: {', '.join(SYNTAX_CHOICES)}")
        return self


def _registered_matcher(value: Any) -> str:
    """A ``match`` value: a registered matcher's name (pydantic's Literal error otherwise)."""
    if isinstance(value, str) and value in MATCHERS:
        return value
    names = [repr(name) for name in matcher_names()]
    expected = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


class _MatcherSchema:
    """The JSON Schema of ``match``: the registered names, read when the schema is made."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        return {"enum": list(matcher_names()), "type": "string"}


MatcherName = Annotated[str, PlainValidator(_registered_matcher), _MatcherSchema()]
"""The name of a registered matcher (:data:`evalkit.contract.matchers.MATCHERS`)."""


class FieldSpec(_Strict):
    """One predicted key compared with one gold column."""

    gold: str | None = None
    """The gold column holding the expected value (required, except with ``parse:
    tool_calls``, where the gold value is the gold call's own ``name`` or argument)."""
    match: MatcherName = "exact"
    """``exact``: equal JSON values; ``normalized``: strings equal after Unicode
    NFKC, lower-casing and whitespace collapsing; ``number``: numbers within
    ``tolerance``; ``set``: lists equal as sets (or F1 at least ``min_f1``).
    Whatever the matcher, a null gold value expects null or an absent key."""
    tolerance: float | None = Field(default=None, ge=0.0)
    """``match: number`` only: largest allowed absolute difference (inclusive)."""
    min_f1: float | None = Field(default=None, gt=0.0, le=1.0)
    """``match: set`` only: a set field matches when its F1 reaches this (default
    1.0, i.e. equal sets); the mean F1 is reported either way."""

    @model_validator(mode="before")
    @classmethod
    def _explicit_defaults(cls, data: Any) -> Any:
        # The normalised contract spells out every default that decides a verdict.
        if isinstance(data, dict):
            name = data.get("match")
            rule = MATCHERS.get(name) if isinstance(name, str) else None
            if rule is not None and rule.option is not None:
                option, default = rule.option
                if data.get(option) is None:
                    data = {**data, option: default}
        return data

    @model_validator(mode="after")
    def _check_options(self) -> FieldSpec:
        # An option belongs to one matcher; set for another it would be silently ignored.
        for rule in MATCHERS.values():
            if rule.option is None:
                continue
            option = rule.option[0]
            if getattr(self, option) is not None and self.match != rule.name:
                raise ValueError(f"'{option}' is for match: {rule.name}")
        return self


class RareSpec(_Strict):
    """Which classes count as rare (judged by their own gate thresholds)."""

    max_support: int = Field(default=10, ge=0)
    """A class with at most this many gold items is rare."""


class SliceSpec(_Strict):
    """A named subset of the gold items whose behaviour must be preserved."""

    name: str = Field(pattern=NAME_PATTERN)
    """The slice's name (used in ``summary.json`` and as column ``slice.<name>``)."""
    where: dict[str, Any] = Field(min_length=1)
    """Conditions on gold columns, all of which must hold: ``col: value``,
    ``col: null``, ``col: [a, b]`` (any of), or ``col: {not: <one of those>}``."""

    @model_validator(mode="after")
    def _check_conditions(self) -> SliceSpec:
        for column, condition in self.where.items():
            if isinstance(condition, dict):
                if set(condition) != {"not"}:
                    raise ValueError(
                        f"where.{column}: a mapping condition takes only the key 'not'"
                    )
                condition = condition["not"]
            if isinstance(condition, dict):
                raise ValueError(f"where.{column}: 'not' takes a value, null or a list")
            values = condition if isinstance(condition, list) else [condition]
            for value in values:
                if not (value is None or isinstance(value, str | int | float | bool)):
                    raise ValueError(f"where.{column}: values must be scalars or null")
        return self


class GoldAnswer(_Strict):
    """Gold read from each conversation's reference answer instead of gold columns.

    A test split in training format holds its gold inside the last assistant
    turn; scoring it as it is avoids a hand-written flattening step, the kind
    of untracked step that makes two numbers incomparable.
    """

    column: str
    """The conversation column of the gold file (``{role, content}`` or ShareGPT messages)."""
    turn: Literal["last_assistant"] = "last_assistant"
    """Which turn holds the reference answer: the content of the last assistant turn,
    parsed by ``output`` with strict extraction. ``class``, ``fields.*.gold`` and the
    slices then name keys of that answer (``label`` for ``parse: label``)."""


class Contract(_Strict):
    """An evaluation contract: fixed before tuning, versioned, fingerprinted."""

    name: str = Field(pattern=NAME_PATTERN)
    """The contract's name, e.g. ``ticket-triage``."""
    version: int = Field(ge=1)
    """Bumped on any rule change; the fingerprint changes with any change anyway."""
    description: str | None = None
    """What the task is and why the rules are what they are."""
    id_column: str = Field(alias="id")
    """The id column, in the gold file and (by default) in the predictions."""
    class_column: str | None = Field(default=None, alias="class")
    """The gold column for the per-class breakdown; a field must compare it."""
    output: OutputSpec = OutputSpec()
    """How raw outputs are parsed (the format)."""
    gold_answer: GoldAnswer | None = None
    """Read gold from a conversation's reference answer (the last assistant turn)
    instead of gold columns; absent: gold columns of the gold file."""
    gold_calls: str | None = None
    """``parse: tool_calls`` only, instead of ``gold_answer``: the gold column holding
    each row's expected calls, ``[{name, arguments}]`` or its JSON text (``[]``: no call
    is expected)."""
    fields: dict[str, FieldSpec] = Field(min_length=1)
    """Content: predicted key (``parse: json``) or the one label field -> gold column + matcher."""
    correct: Literal["all"] | list[str] = "all"
    """Which fields must all match for an example to be content-correct."""
    rare: RareSpec = RareSpec()
    """Which classes are rare."""
    slices: list[SliceSpec] = []
    """Behaviours to preserve, each a subset of gold items."""
    gate: GateRules | None = None
    """The rules ``evalkit gate`` applies (read from the result by compare/gate)."""

    @model_validator(mode="after")
    def _check_references(self) -> Contract:
        if self.output.parse == "tool_calls":
            self._check_tool_calls()
        elif self.gold_calls is not None:
            raise ValueError("'gold_calls' is for output.parse: tool_calls")
        else:
            for name, spec in self.fields.items():
                if spec.gold is None:
                    raise ValueError(f"missing key 'fields.{name}.gold'")
        if isinstance(self.correct, list):
            if not self.correct:
                raise ValueError("correct: list at least one field, or write 'all'")
            for name in self.correct:
                if name not in self.fields:
                    raise ValueError(
                        f"correct: {name!r} is not a field; the fields are: "
                        + ", ".join(self.fields)
                    )
        if self.output.parse == "label" and len(self.fields) != 1:
            raise ValueError("parse: label needs exactly one field (it receives the label)")
        if (
            self.output.parse != "tool_calls"
            and self.class_column is not None
            and self.class_field is None
        ):
            raise ValueError(
                f"class: {self.class_column!r} is the gold column of no field; add a field "
                f"with gold: {self.class_column}"
            )
        if self.gold_answer is not None and self.output.parse == "label":
            for name, spec in self.fields.items():
                if spec.gold != LABEL_KEY:
                    raise ValueError(
                        f"fields.{name}.gold: with gold_answer and parse: label the reference "
                        f"answer is the label itself; write gold: {LABEL_KEY}"
                    )
        names = [item.name for item in self.slices]
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise ValueError(f"slices: name {duplicated[0]!r} is used twice")
        return self

    def _check_tool_calls(self) -> None:
        """The rules of a ``parse: tool_calls`` contract (a ValueError names the key)."""
        if (self.gold_answer is None) == (self.gold_calls is None):
            raise ValueError(
                "parse: tool_calls reads the gold calls from 'gold_answer' (the reference "
                "turn's tool_calls) or from a 'gold_calls' column: give exactly one"
            )
        if self.class_column not in (None, FUNCTION_CLASS):
            raise ValueError(
                f"class: with parse: tool_calls the class is the called function; write "
                f"class: {FUNCTION_CLASS} (got {self.class_column!r})"
            )
        for name, spec in self.fields.items():
            key = f"fields.{name}"
            argument = name.startswith(ARGUMENT_PREFIX) and len(name) > len(ARGUMENT_PREFIX)
            if name != NAME_FIELD and not argument:
                raise ValueError(
                    f"{key}: with parse: tool_calls a field is 'name' or 'arguments.<key>' "
                    "(one argument of the call)"
                )
            if spec.gold is not None:
                raise ValueError(
                    f"{key}.gold: with parse: tool_calls the gold value is the gold call's own "
                    f"{'name' if name == NAME_FIELD else 'argument'}; leave 'gold' out"
                )
            if name == NAME_FIELD and not MATCHERS[spec.match].compares_names:
                raise ValueError(f"{key}: a function name is text; use match: exact or normalized")

    @property
    def class_field(self) -> str | None:
        """The field whose gold column is the class column (its value is the predicted class).

        With ``parse: tool_calls`` the class is the called function: the ``name``
        field when the contract lists it.
        """
        if self.output.parse == "tool_calls":
            return "name" if self.class_column is not None and "name" in self.fields else None
        for name, spec in self.fields.items():
            if spec.gold == self.class_column:
                return name
        return None

    @property
    def correct_fields(self) -> list[str]:
        """The fields that decide content correctness."""
        return list(self.fields) if self.correct == "all" else list(self.correct)

    @property
    def gold_columns(self) -> list[str]:
        """Every gold column the contract reads, in a stable order."""
        named = [self.id_column, *(name for _, name in self.gold_references)]
        return list(dict.fromkeys(named))

    @property
    def gold_references(self) -> list[tuple[str, str]]:
        """(contract key, gold name) of every gold name besides the id, in a stable order.

        The key says where the contract names it, for errors that must point at the rule.
        """
        named: list[tuple[str, str]] = []
        if self.output.parse == "tool_calls":  # the class (the called function) is no column
            if self.gold_calls is not None:
                named.append(("gold_calls", self.gold_calls))
            if isinstance(self.output.tools, str):
                named.append(("output.tools", self.output.tools))
            for index, item in enumerate(self.slices):
                named += [
                    (f"slices[{index}].where.{column}", column)
                    for column in item.where
                    if column != FUNCTION_CLASS
                ]
            return named
        if self.class_column:
            named.append(("class", self.class_column))
        named += [
            (f"fields.{name}.gold", spec.gold)
            for name, spec in self.fields.items()
            if spec.gold is not None
        ]
        for index, item in enumerate(self.slices):
            named += [(f"slices[{index}].where.{column}", column) for column in item.where]
        return named
