"""The contract model and loader: examples load, every mistake names its key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_line_error

from evalkit.contract import contract_fingerprint, load_contract, normalized_contract
from evalkit.contract.schema import contract_json_schema_text
from evalkit.errors import InvalidContract, InvalidSchema

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"
LABEL = ROOT / "contracts" / "ticket-category-label.yaml"

MINIMAL = """\
name: t
version: 1
id: ticket_id
class: category
fields:
  category: {gold: category}
"""


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_example_contracts_load() -> None:
    triage = load_contract(TRIAGE)
    assert triage.class_field == "category"
    assert triage.fields["amount"].tolerance == 0.01
    assert triage.gate is not None and triage.gate.vs_baseline.max_rare_class_drop == 0.2
    label = load_contract(LABEL)
    assert label.output.parse == "label" and label.output.labels
    assert len(label.output.labels) == 8


def test_defaults_are_explicit_in_the_normalised_contract(tmp_path: Path) -> None:
    normalized = normalized_contract(load_contract(write(tmp_path, MINIMAL)))
    assert normalized["output"] == {
        "parse": "json",
        "extract": "lenient",
        "labels": None,
        "schema": {"type": "object"},
    }
    assert normalized["correct"] == "all"
    assert normalized["rare"] == {"max_support": 10}
    assert normalized["fields"]["category"]["match"] == "exact"


def test_number_and_set_defaults_are_spelled_out(tmp_path: Path) -> None:
    text = MINIMAL + "  amount: {gold: amount, match: number}\n  tags: {gold: tags, match: set}\n"
    contract = load_contract(write(tmp_path, text))
    assert contract.fields["amount"].tolerance == 0.0
    assert contract.fields["tags"].min_f1 == 1.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MINIMAL + "colour: red\n", "unknown key 'colour'; the keys allowed there are: class,"),
        (
            MINIMAL.replace("{gold: category}", "{gold: category, mach: exact}"),
            "unknown key 'fields.category.mach'; the keys allowed there are: gold, match,",
        ),
        (
            MINIMAL + "output: {parse: json, extrct: strict}\n",
            "unknown key 'output.extrct'; the keys allowed there are: calls, extract, labels,",
        ),
        (
            MINIMAL + "gate: {vs_baseline: {max_drop: 0.1}}\n",
            "unknown key 'gate.vs_baseline.max_drop'",
        ),
        (
            MINIMAL + "slices: [{name: s, where: {a: 1}, wher: {}}]\n",
            "unknown key 'slices[0].wher'",
        ),
        (MINIMAL.replace("version: 1\n", ""), "missing key 'version'"),
        (MINIMAL.replace("version: 1", "version: one"), "key 'version': input should be"),
        (
            MINIMAL + "output: {parse: xml}\n",
            "key 'output.parse': input should be 'json', 'label' or 'tool_calls' (got 'xml')",
        ),
        (MINIMAL + "correct: [priority]\n", "correct: 'priority' is not a field"),
        (MINIMAL.replace("class: category", "class: priority"), "class: 'priority' is the gold"),
        (
            MINIMAL + "output: {parse: label}\n",
            "output: parse: label needs a non-empty list 'labels'",
        ),
        (
            MINIMAL.replace("{gold: category}", "{gold: category, tolerance: 0.1}"),
            "fields.category: 'tolerance' is for match: number",
        ),
        (
            MINIMAL + "slices: [{name: a, where: {x: 1}}, {name: a, where: {y: 2}}]\n",
            "slices: name 'a' is used twice",
        ),
        (MINIMAL + "gate: {min_format_validity: 1.5}\n", "gate.min_format_validity"),
    ],
)
def test_mistakes_name_the_key(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InvalidContract) as caught:
        load_contract(path)
    message = caught.value.message
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message


def test_duplicate_keys_are_refused_with_their_line(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "version: 2\n")
    with pytest.raises(InvalidContract, match=r"c\.yaml:7: key 'version' is given twice"):
        load_contract(path)
    as_json = write(tmp_path, '{"name": "t", "name": "u"}', "c.json")
    with pytest.raises(InvalidContract, match="key 'name' is given twice"):
        load_contract(as_json)


def test_syntax_errors_name_the_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidContract, match=r"c\.yaml:3: not valid YAML"):
        load_contract(write(tmp_path, "name: t\nversion: 1\n  bad: indent\nid: x\n"))
    with pytest.raises(InvalidContract, match=r"c\.json:2: not valid JSON"):
        load_contract(write(tmp_path, '{"name": "t",\n ]', "c.json"))
    with pytest.raises(InvalidContract, match="expected a mapping of keys, found a list"):
        load_contract(write(tmp_path, "- a\n- b\n"))


def test_json_contract_equals_yaml_contract(tmp_path: Path) -> None:
    yaml_contract = load_contract(TRIAGE)
    data = normalized_contract(yaml_contract)
    json_path = write(tmp_path, json.dumps(data), "triage.json")
    assert contract_fingerprint(load_contract(json_path)) == contract_fingerprint(yaml_contract)


def test_fingerprint_changes_with_any_rule(tmp_path: Path) -> None:
    base = contract_fingerprint(load_contract(write(tmp_path, MINIMAL)))
    assert base.startswith("sha256:") and len(base) == 71
    assert contract_fingerprint(load_contract(write(tmp_path, MINIMAL))) == base
    changed = [
        MINIMAL.replace("version: 1", "version: 2"),
        MINIMAL.replace("{gold: category}", "{gold: category, match: normalized}"),
        MINIMAL + "gate: {min_content_accuracy: 0.5}\n",
        MINIMAL + "rare: {max_support: 3}\n",
    ]
    for text in changed:
        assert contract_fingerprint(load_contract(write(tmp_path, text))) != base


def test_fingerprint_covers_the_validator_version(monkeypatch: pytest.MonkeyPatch) -> None:
    import evalkit.contract.validation as validation

    contract = load_contract(TRIAGE)
    before = contract_fingerprint(contract)
    real = validation.evaluator_semantics()
    monkeypatch.setattr(
        validation,
        "evaluator_semantics",
        lambda: {**real, "validator": "jsonschema-rs 9.9.9"},
    )
    assert contract_fingerprint(contract) != before


def test_schema_file_is_inlined_and_fingerprinted_by_content(tmp_path: Path) -> None:
    schema = {"type": "object", "required": ["category"]}
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "out.json").write_text(json.dumps(schema))
    from_file = load_contract(
        write(tmp_path, MINIMAL + "output: {schema_file: schemas/out.json}\n")
    )
    inline = load_contract(write(tmp_path, MINIMAL + f"output: {{schema: {json.dumps(schema)}}}\n"))
    assert from_file.output.json_schema == schema
    assert "schema_file" not in normalized_contract(from_file)["output"]
    assert contract_fingerprint(from_file) == contract_fingerprint(inline)
    with pytest.raises(InvalidContract, match=r"output.schema_file: .*no such file"):
        load_contract(write(tmp_path, MINIMAL + "output: {schema_file: nope.json}\n"))


def test_schema_file_outside_the_contracts_folder_is_refused(run_cli, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "object", "description": "not meant to be read"}')
    folder = tmp_path / "contracts" / "team"
    folder.mkdir(parents=True)
    (folder / "link.json").symlink_to(secret)
    for relative in ("../../secret.json", str(secret), "link.json", "sub/../../../secret.json"):
        contract = write(folder, MINIMAL + f"output: {{schema_file: {json.dumps(relative)}}}\n")
        with pytest.raises(InvalidSchema, match="outside the contract's folder"):
            load_contract(contract)
        result = run_cli("contract", "check", contract)
        assert_one_line_error(result, "output.schema_file", "outside the contract's folder")
        assert "not meant to be read" not in result.stdout
    (folder / "schemas").mkdir()
    (folder / "schemas" / "s.json").write_text('{"type": "object"}')
    inside = write(folder, MINIMAL + "output: {schema_file: ./schemas/../schemas/s.json}\n")
    assert load_contract(inside).output.json_schema == {"type": "object"}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "strin"}, "output.schema: at schema.type: 'strin' is not valid"),
        ({"required": "category"}, "at schema.required: 'category' is not of type 'array'"),
        ({"properties": {"a": {"minimum": "0"}}}, "at schema.properties.a.minimum"),
        ({"type": "string", "pattern": "(unclosed"}, 'is not a "regex"'),
        ({"$ref": "https://example.com/s.json"}, "evalkit never fetches remote $ref"),
        ({"$ref": "other.json"}, "evalkit never fetches remote $ref"),
        ({"$schema": "https://example.com/meta", "type": "object"}, "not a known JSON Schema"),
    ],
)
def test_invalid_schemas_are_refused(tmp_path: Path, schema: dict, expected: str) -> None:
    path = write(tmp_path, MINIMAL + f"output: {{schema: {json.dumps(schema)}}}\n")
    with pytest.raises(InvalidSchema) as caught:
        load_contract(path)
    assert expected in caught.value.message
    assert "\n" not in caught.value.message


def test_local_refs_and_other_drafts_are_fine(tmp_path: Path) -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"cat": {"type": "string"}},
        "properties": {"category": {"$ref": "#/definitions/cat"}},
    }
    contract = load_contract(
        write(tmp_path, MINIMAL + f"output: {{schema: {json.dumps(schema)}}}\n")
    )
    assert contract.output.json_schema == schema


def test_committed_json_schema_is_in_sync() -> None:
    committed = (ROOT / "contracts" / "contract.schema.json").read_text(encoding="utf-8")
    assert committed == contract_json_schema_text(), (
        "regenerate: evalkit contract schema --out contracts/contract.schema.json --force"
    )


def test_committed_json_schema_accepts_the_examples_and_rejects_unknown_keys() -> None:
    import jsonschema
    import yaml

    schema = json.loads((ROOT / "contracts" / "contract.schema.json").read_text())
    for path in (TRIAGE, LABEL):
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    broken = {**yaml.safe_load(TRIAGE.read_text()), "colour": "red"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_contract_check_prints_fingerprint_and_normalised_contract(run_cli) -> None:
    result = run_cli("contract", "check", TRIAGE)
    assert result.exit_code == 0, result.stderr
    fingerprint = contract_fingerprint(load_contract(TRIAGE))
    assert f"# fingerprint: {fingerprint}" in result.stdout
    assert "max_rare_class_drop: 0.2" in result.stdout
    as_json = run_cli("contract", "check", TRIAGE, "--format", "json")
    body = "\n".join(line for line in as_json.stdout.splitlines() if not line.startswith("#"))
    assert json.loads(body) == normalized_contract(load_contract(TRIAGE))


def test_contract_check_rejects_with_one_line(run_cli, tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "colour: red\n")
    assert_one_line_error(run_cli("contract", "check", path), str(path), "unknown key 'colour'")
    bad_schema = write(tmp_path, MINIMAL + "output: {schema: {type: strin}}\n", "s.yaml")
    assert_one_line_error(run_cli("contract", "check", bad_schema), "output.schema", "strin")


def test_contract_schema_prints_and_writes(run_cli, tmp_path: Path) -> None:
    printed = run_cli("contract", "schema")
    assert printed.exit_code == 0
    assert printed.stdout == contract_json_schema_text()
    target = tmp_path / "schema.json"
    written = run_cli("contract", "schema", "--out", target)
    assert written.exit_code == 0 and target.read_text() == contract_json_schema_text()
    assert_one_line_error(run_cli("contract", "schema", "--out", target), "pass --force")


PRODUCIBLE = """\
name: t
version: 1
id: ticket_id
fields:
  category: {gold: category}
  amount: {gold: amount, match: number}
"""


@pytest.mark.parametrize(
    ("schema", "fragments"),
    [
        ({"type": "object", "properties": {"category": {}}, "additionalProperties": False},
         ["fields.amount", "admits no key 'amount'", "additionalProperties: false"]),
        ({"properties": {"amount": {"type": "string"}}},
         ["fields.amount", "match: number needs a number", "only string"]),
        ({"properties": {"amount": False}}, ["fields.amount", "no value but null"]),
        ({"properties": {"amount": {"enum": ["1", "2"]}}}, ["fields.amount", "only string"]),
        ({"properties": {"amount": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
         ["fields.amount", "only null, string"]),
        ({"$defs": {"money": {"type": "string"}},
          "properties": {"amount": {"$ref": "#/$defs/money"}}}, ["fields.amount", "only string"]),
        ({"type": "array"}, ["fields.category", "never an object"]),
        ({"propertyNames": {"enum": ["category"]}}, ["fields.amount", "propertyNames.enum"]),
        ({"patternProperties": {"^c": {}}, "additionalProperties": False},
         ["fields.amount", "admits no key"]),
    ],
)  # fmt: skip
def test_contract_check_fails_a_field_the_schema_cannot_produce(
    run_cli, tmp_path: Path, schema, fragments
) -> None:
    contract = write(tmp_path, PRODUCIBLE + f"output: {{schema: {json.dumps(schema)}}}\n")
    with pytest.raises(InvalidSchema):
        load_contract(contract)
    assert_one_line_error(run_cli("contract", "check", contract), *fragments)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object"},
        {"properties": {"amount": {"type": ["number", "null"]}}, "additionalProperties": False,
         "patternProperties": {"^cat": {"type": "string"}}},
        {"properties": {"amount": {"type": "integer"}}},
        {"properties": {"amount": {"anyOf": [{"type": "number"}, {"type": "null"}]}}},
        {"$defs": {"money": {"type": "number"}},
         "properties": {"amount": {"$ref": "#/$defs/money"}}},
        {"properties": {"amount": {"$ref": "https://example.com/not-judged.json"}}},
        {"properties": {"amount": {"allOf": [{"type": "number"}]}}},
    ],
)  # fmt: skip
def test_fields_the_schema_can_produce_pass(tmp_path: Path, schema) -> None:
    text = PRODUCIBLE + f"output: {{schema: {json.dumps(schema)}}}\n"
    if "https://" in text:  # a remote $ref is refused on its own (never fetched)
        with pytest.raises(InvalidSchema, match="remote"):
            load_contract(write(tmp_path, text))
        return
    load_contract(write(tmp_path, text))
