"""``evalkit card`` on adapter folders written by peft: counts, scaling, hash, every problem.

References: peft's own ``get_nb_trainable_parameters()`` and its LoRA layers'
``in_features``/``out_features``/``r``/``scaling``; the ``safetensors``
package for what a valid file is; transformers' ``len(tokenizer)``.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
from pathlib import Path

import pytest
from conftest import assert_one_line_error
from peft_adapters import VARIANTS, edit_config, save_tokenizer

from evalkit.provenance.card import adapter_card, card_json, load_card

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def codes(card) -> list[str]:
    return [problem.code for problem in card.problems]


@pytest.fixture
def copy_of(peft_adapters, tmp_path):
    def copy(name: str) -> Path:
        return Path(shutil.copytree(peft_adapters[name].path, tmp_path / name))

    return copy


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_trainable_parameters_equal_what_peft_reports(peft_adapters, name) -> None:
    built = peft_adapters[name]
    card = adapter_card(built.path)
    assert card.trainable_params == built.trainable


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_module_has_peft_sizes_rank_and_scaling(peft_adapters, name) -> None:
    built = peft_adapters[name]
    card = adapter_card(built.path)
    modules = {module.name: module for module in card.modules}
    assert set(modules) == set(built.modules)
    for module_name, reference in built.modules.items():
        module = modules[module_name]
        assert (module.d_in, module.d_out, module.r) == (
            reference["d_in"],
            reference["d_out"],
            reference["r"],
        )
        assert module.scaling == pytest.approx(reference["scaling"], rel=1e-12)


def test_lora_params_are_r_times_d_in_plus_d_out(peft_adapters) -> None:
    card = adapter_card(peft_adapters["lora_qv"].path)
    for module in card.modules:
        assert module.params == module.r * (module.d_in + module.d_out)
    # q_proj 32 -> 32, v_proj 32 -> 16 (2 kv heads of 8), r = 4, two layers
    assert sum(m.params for m in card.modules) == 2 * (4 * 64 + 4 * 48)


def test_scaling_rules_classic_and_rslora(peft_adapters) -> None:
    classic = adapter_card(peft_adapters["lora_qv"].path).lora
    rs = adapter_card(peft_adapters["rslora"].path).lora
    assert (classic.scaling_rule, classic.scaling) == ("alpha/r", 8 / 4)
    assert (rs.scaling_rule, rs.scaling) == ("alpha/sqrt(r)", 8 / math.sqrt(4))


def test_dora_magnitude_vectors_add_d_out(peft_adapters) -> None:
    card = adapter_card(peft_adapters["dora"].path)
    assert card.lora.use_dora
    for module in card.modules:
        assert module.params == module.r * (module.d_in + module.d_out) + module.d_out


def test_rank_and_alpha_patterns_apply_per_module(peft_adapters) -> None:
    card = adapter_card(peft_adapters["rank_pattern"].path)
    by_name = {module.name: module for module in card.modules}
    assert by_name["model.layers.0.self_attn.v_proj"].r == 4
    assert by_name["model.layers.0.self_attn.o_proj"].r == 2
    assert by_name["model.layers.1.self_attn.o_proj"].r == 6
    assert by_name["model.layers.0.self_attn.q_proj"].lora_alpha == 16
    assert by_name["model.layers.0.self_attn.q_proj"].scaling == 16 / 2
    assert "rank_mismatch" not in codes(card)


def test_all_linear_modules_to_save_embedding_and_bias_tensors(peft_adapters) -> None:
    all_linear = adapter_card(peft_adapters["all_linear"].path)
    assert len(all_linear.modules) == 2 * 7  # q k v o gate up down, two layers
    saved = adapter_card(peft_adapters["modules_to_save"].path).full_tensors
    assert [(t.name, t.role, t.trainable) for t in saved] == [
        ("lm_head.weight", "modules_to_save", True)
    ]
    embedding = adapter_card(peft_adapters["embedding"].path)
    assert any(m.kind == "embedding" and m.d_in == 64 for m in embedding.modules)
    # peft saves the base embedding beside an embedding LoRA: saved, not trained
    assert [(t.role, t.trainable) for t in embedding.full_tensors] == [("saved_embedding", False)]
    biases = adapter_card(peft_adapters["bias_all"].path).full_tensors
    assert biases and all(t.role == "bias" and t.trainable for t in biases)


def test_untrained_adapter_is_empty_and_trained_one_is_not(peft_adapters) -> None:
    assert "empty_adapter" in codes(adapter_card(peft_adapters["untrained"].path))
    assert "empty_adapter" not in codes(adapter_card(peft_adapters["lora_qv"].path))


def test_unpinned_base_until_a_commit_is_given(peft_adapters, copy_of) -> None:
    path = peft_adapters["lora_qv"].path
    card = adapter_card(path)
    assert card.problems[0].code == "unpinned_base" and card.problems[0].severity == "error"
    pinned = adapter_card(path, base_revision=COMMIT)
    assert "unpinned_base" not in codes(pinned) and pinned.base.pinned
    folder = copy_of("lora_qv")
    edit_config(folder, revision="main", base_model_name_or_path="org/base")
    card = adapter_card(folder)
    assert "unpinned_base" in codes(card) and "'main' is not a commit" in card.problems[0].message


def test_an_upper_case_commit_pins_the_base_in_git_spelling(peft_adapters, copy_of) -> None:
    pinned = adapter_card(peft_adapters["lora_qv"].path, base_revision=COMMIT.upper())
    assert pinned.base.pinned and pinned.base.revision == COMMIT.lower()
    folder = copy_of("lora_qv")
    edit_config(folder, revision=COMMIT.upper())
    card = adapter_card(folder, base_revision=COMMIT.lower())  # the same commit: no conflict
    assert card.base.pinned and "unpinned_base" not in codes(card)


@pytest.mark.parametrize(
    ("base_id", "local"),
    [
        ("org/base", False),
        ("gpt2", False),
        ("examples/model/base", True),
        ("/models/llama-3-8b", True),
        ("./base", True),
        ("~/models/base", True),
        ("C:\\models\\base", True),
    ],
)
def test_unpinned_base_says_what_pins_a_hub_id_or_a_local_folder(copy_of, base_id, local) -> None:
    folder = copy_of("lora_qv")
    edit_config(folder, base_model_name_or_path=base_id, revision=None)
    (message,) = [p.message for p in adapter_card(folder).problems if p.code == "unpinned_base"]
    assert message.startswith(f"base {base_id} ")
    if local:  # a folder has no main branch: its weights' hashes pin it
        assert "main branch" not in message
        assert "is a local folder" in message and "sha256" in message
        assert "--base-revision <40-hex commit> if the folder is a copy of a Hub model" in message
    else:
        assert "the base's main branch" in message and "local folder" not in message
        assert message.endswith("pass --base-revision <40-hex commit>")


def test_a_hub_shaped_base_that_is_a_folder_here_is_local(copy_of, tmp_path, monkeypatch) -> None:
    folder = copy_of("lora_qv")
    edit_config(folder, base_model_name_or_path="models/base", revision="main")
    monkeypatch.chdir(tmp_path)
    hub = next(p for p in adapter_card(folder).problems if p.code == "unpinned_base")
    assert "'main' is not a commit" in hub.message and "main branch is then" in hub.message
    (tmp_path / "models" / "base").mkdir(parents=True)  # transformers would load this folder
    local = next(p for p in adapter_card(folder).problems if p.code == "unpinned_base")
    assert "is a local folder with revision 'main', not a commit, so" in local.message


def test_revision_comes_from_a_hub_cache_snapshot_path(copy_of) -> None:
    folder = copy_of("lora_qv")
    snapshot = f"/cache/hub/models--org--base/snapshots/{COMMIT}"
    edit_config(folder, base_model_name_or_path=snapshot)
    card = adapter_card(folder)
    assert card.base.revision == COMMIT and card.base.pinned


def _tensors_of(path: Path) -> dict:
    from safetensors.numpy import load_file

    return load_file(str(path))


def _write_safetensors(path: Path, tensors: dict, order: list[str], pad: int) -> None:
    """A safetensors file by hand (the documented format), tensors in ``order``, padded header."""
    dtypes = {"float32": "F32", "float16": "F16"}
    header, offset, blobs = {"__metadata__": {"written": "by hand"}}, 0, []
    for name in order:
        data = tensors[name].tobytes()
        header[name] = {"dtype": dtypes[str(tensors[name].dtype)],
                        "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}  # fmt: skip
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode() + b" " * pad
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_canonical_hash_ignores_layout_and_order_but_not_values(peft_adapters, copy_of) -> None:
    from safetensors.numpy import load_file

    original = adapter_card(peft_adapters["lora_qv"].path)
    folder = copy_of("lora_qv")
    weights = folder / "adapter_model.safetensors"
    tensors = _tensors_of(weights)
    _write_safetensors(weights, tensors, sorted(tensors, reverse=True), pad=13)
    assert sorted(load_file(str(weights))) == sorted(tensors)  # safetensors accepts the file
    reordered = adapter_card(folder)
    assert (
        reordered.files["adapter_model.safetensors"] != original.files["adapter_model.safetensors"]
    )
    assert reordered.weights_sha256 == original.weights_sha256
    name = sorted(tensors)[0]
    changed = dict(tensors)
    changed[name] = tensors[name].copy()
    changed[name].flat[0] += 1.0
    _write_safetensors(weights, changed, sorted(changed), pad=0)
    assert adapter_card(folder).weights_sha256 != original.weights_sha256


def test_legacy_bin_reads_like_safetensors(peft_adapters, tmp_path) -> None:
    from peft import PeftModel
    from peft_adapters import _model

    model = PeftModel.from_pretrained(_model(), str(peft_adapters["dora"].path))
    model.save_pretrained(str(tmp_path / "legacy"), safe_serialization=False)
    assert (tmp_path / "legacy" / "adapter_model.bin").is_file()
    legacy = adapter_card(tmp_path / "legacy")
    modern = adapter_card(peft_adapters["dora"].path)
    assert legacy.weights_file == "adapter_model.bin"
    assert legacy.trainable_params == modern.trainable_params
    assert legacy.weights_sha256 == modern.weights_sha256


def test_hostile_pickle_is_refused(tmp_path, run_cli, copy_of) -> None:
    import pickle
    import zipfile

    folder = copy_of("lora_qv")
    (folder / "adapter_model.safetensors").unlink()

    class Boom:
        def __reduce__(self):
            return (print, ("owned",))

    with zipfile.ZipFile(folder / "adapter_model.bin", "w") as archive:
        archive.writestr("adapter_model/data.pkl", pickle.dumps({"x": Boom()}))
    assert_one_line_error(run_cli("card", folder), "refers to builtins.print")


def test_shape_mismatch_against_a_base_of_another_width(peft_adapters) -> None:
    root = peft_adapters["lora_qv"].path.parent
    same = adapter_card(peft_adapters["lora_qv"].path, base=root / "base")
    assert not {"shape_mismatch", "coverage"} & set(codes(same))
    assert same.base.config_sha256 is not None
    other = adapter_card(peft_adapters["lora_qv"].path, base=root / "wide_base")
    mismatches = [p for p in other.problems if p.code == "shape_mismatch"]
    assert len(mismatches) == 4 and "base weight is [48, 48]" in mismatches[0].message


@pytest.mark.parametrize(
    "name", ["all_linear", "embedding", "modules_to_save", "rank_pattern", "regex"]
)
def test_no_coverage_problem_where_targets_resolve_as_peft_did(peft_adapters, name) -> None:
    root = peft_adapters[name].path.parent
    assert "coverage" not in codes(adapter_card(peft_adapters[name].path, base=root / "base"))


def test_a_regex_target_is_matched_on_whole_names_as_peft_does(peft_adapters, copy_of) -> None:
    card = adapter_card(peft_adapters["regex"].path)
    assert card.lora.target_modules == r".*\.1\.self_attn\.(q|v)_proj"
    assert [m.name for m in card.modules] == [
        "model.layers.1.self_attn.q_proj",
        "model.layers.1.self_attn.v_proj",
    ]
    folder = copy_of("regex")
    edit_config(folder, target_modules=r".*\.self_attn\.(q|v)_proj")  # layer 0 too: untouched
    base = peft_adapters["regex"].path.parent / "base"
    problem = next(p for p in adapter_card(folder, base=base).problems if p.code == "coverage")
    assert "names 2 modules" in problem.message and "layers.0.self_attn.q_proj" in problem.message


@pytest.mark.parametrize(
    ("key", "value"),
    [("target_modules", "(q"), ("exclude_modules", "[x"), ("layers_pattern", ["layers", "(a"])],
)
def test_an_invalid_regex_in_the_config_is_one_line_naming_the_key(
    run_cli, copy_of, key, value
) -> None:
    folder = copy_of("lora_qv")
    edit_config(folder, **{key: value})
    assert_one_line_error(
        run_cli("card", folder), f"key {key!r} is not a valid regular expression", "fix the pattern"
    )


def test_coverage_when_targets_name_modules_without_tensors(peft_adapters, copy_of) -> None:
    folder = copy_of("lora_qv")
    edit_config(folder, target_modules=["q_proj", "k_proj", "v_proj"])
    card = adapter_card(folder, base=peft_adapters["lora_qv"].path.parent / "base")
    problem = next(p for p in card.problems if p.code == "coverage")
    assert "names 2 modules" in problem.message and "k_proj" in problem.message


def test_rank_mismatch_when_the_config_disagrees_with_the_tensors(copy_of) -> None:
    folder = copy_of("lora_qv")
    edit_config(folder, r=8)
    problems = [p for p in adapter_card(folder).problems if p.code == "rank_mismatch"]
    assert (
        len(problems) == 4 and "rank 4" in problems[0].message and "says 8" in problems[0].message
    )


def test_unknown_config_keys_warn_only_away_from_their_defaults(copy_of) -> None:
    folder = copy_of("lora_qv")
    edit_config(folder, megatron_config=None, future_feature=None, use_qalora=False)
    assert "unknown_config_key" not in codes(adapter_card(folder))
    edit_config(folder, future_feature={"mode": "on"}, use_qalora=True)
    warnings = [p for p in adapter_card(folder).problems if p.code == "unknown_config_key"]
    assert [w.severity for w in warnings] == ["warning", "warning"]
    assert "future_feature" in warnings[0].message and "use_qalora" in warnings[1].message


def test_old_peft_config_without_newer_keys(copy_of) -> None:
    folder = copy_of("lora_qv")
    path = folder / "adapter_config.json"
    config = json.loads(path.read_text())
    old_keys = ["base_model_name_or_path", "bias", "fan_in_fan_out", "inference_mode",
                "init_lora_weights", "lora_alpha", "lora_dropout", "modules_to_save",
                "peft_type", "r", "target_modules", "task_type"]  # peft 0.4's keys  # fmt: skip
    path.write_text(json.dumps({key: config[key] for key in old_keys if key in config}))
    card = adapter_card(folder)
    assert card.lora.use_dora is False and card.lora.rank_pattern == {}
    assert card.peft_version is None and card.trainable_params == 896


def test_vocab_mismatch_when_the_tokenizer_outgrows_the_embeddings(peft_adapters, copy_of) -> None:
    from transformers import AutoTokenizer

    folder = copy_of("embedding")
    save_tokenizer(folder, tokens=70)
    reference = AutoTokenizer.from_pretrained(str(folder))
    card = adapter_card(folder)
    assert card.tokenizer.length == len(reference) == 70
    assert card.tokenizer.added_tokens == len(reference.added_tokens_decoder)
    assert card.tokenizer.chat_template_sha256
    problems = [p for p in card.problems if p.code == "vocab_mismatch"]
    assert problems and problems[0].severity == "error" and "64 rows" in problems[0].message
    plain = copy_of("lora_qv")
    save_tokenizer(plain, tokens=70)  # new tokens, no embeddings saved, base has 64 rows
    base = peft_adapters["lora_qv"].path.parent / "base"
    assert "vocab_mismatch" in codes(adapter_card(plain, base=base))
    assert "vocab_mismatch" not in codes(adapter_card(peft_adapters["embedding"].path, base=base))


def test_training_settings_from_file_and_folder(copy_of, tmp_path) -> None:
    folder = copy_of("lora_qv")
    (folder / "trainer_state.json").write_text(
        json.dumps({"global_step": 30, "max_steps": 30, "log_history": [{"loss": 1.0}]})
    )
    (tmp_path / "train.yaml").write_text("learning_rate: 0.0002\nseed: 7\n")
    card = adapter_card(folder, training=tmp_path / "train.yaml")
    assert card.training == {"global_step": 30, "learning_rate": 0.0002, "max_steps": 30, "seed": 7}
    assert "trainer_state.json" in card.files


def test_card_json_round_trips_and_is_deterministic(peft_adapters, tmp_path, run_cli) -> None:
    path = peft_adapters["rank_pattern"].path
    first = run_cli("card", path, "--json", tmp_path / "card.json", "--base-revision", COMMIT)
    assert first.exit_code == 0, first.stderr
    assert "trainable  1,152 parameters" in first.stdout
    data = (tmp_path / "card.json").read_bytes()
    assert card_json(load_card(tmp_path / "card.json")) == data
    again = run_cli("card", path, "--json", tmp_path / "card.json", "--base-revision", COMMIT,
                    "--force")  # fmt: skip
    assert again.exit_code == 0 and (tmp_path / "card.json").read_bytes() == data
    assert_one_line_error(
        run_cli("card", path, "--json", tmp_path / "card.json"), "exists already; pass --force"
    )


def test_card_exit_codes(peft_adapters, run_cli) -> None:
    unpinned = run_cli("card", peft_adapters["lora_qv"].path)
    assert unpinned.exit_code == 1 and "error    unpinned_base" in unpinned.stdout
    pinned = run_cli("card", peft_adapters["lora_qv"].path, "--base-revision", COMMIT)
    assert pinned.exit_code == 0 and "card: no problem" in pinned.stdout


def test_not_an_adapter_folder(peft_adapters, run_cli, tmp_path) -> None:
    assert_one_line_error(run_cli("card", tmp_path / "nowhere"), "no such folder")
    assert_one_line_error(run_cli("card", tmp_path), "no adapter_config.json", "not a PEFT")
    base = peft_adapters["lora_qv"].path.parent / "base"
    assert_one_line_error(run_cli("card", base), "pass it as --base")
    (tmp_path / "file.txt").write_text("x")
    assert_one_line_error(run_cli("card", tmp_path / "file.txt"), "is a file")
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 4}))
    assert_one_line_error(run_cli("card", tmp_path), "no 'peft_type'")
    (tmp_path / "adapter_config.json").write_text('{"peft_type": "LORA"')
    assert_one_line_error(run_cli("card", tmp_path), "adapter_config.json:1: not valid JSON")
    (tmp_path / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
    assert_one_line_error(run_cli("card", tmp_path), "no adapter_model.safetensors")
    assert_one_line_error(
        run_cli("card", peft_adapters["lora_qv"].path, "--base", "org/some-model"),
        "never a hub id",
    )


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("use_rslora", "false", "true or false"),  # truthy: would silently mean rsLoRA
        ("use_dora", 1, "true or false"),
        ("modules_to_save", "lm_head", "a list of module names"),  # not l, m, _, h, …
        ("bias", "some", "one of all, lora_only, none"),
        ("r", 0, "a positive integer"),
        ("r", 4.5, "a positive integer"),
        ("lora_alpha", "16", "a number"),
        ("base_model_name_or_path", 5, "a string or null"),
        ("revision", 123, "a string or null"),
        ("task_type", ["CAUSAL_LM"], "a string or null"),
        ("peft_version", 0.21, "a string or null"),
        ("init_lora_weights", 3, "true, false or a method name"),
        ("layers_to_transform", "0", "a layer index or a list of them"),
        ("layers_pattern", 5, "a module name or a list of them"),
        ("target_modules", 5, "a list of module names or a regex string"),
    ],
)
def test_a_config_key_of_the_wrong_type_is_one_line_naming_it(
    run_cli, copy_of, key, value, expected
) -> None:
    folder = copy_of("lora_qv")
    edit_config(folder, **{key: value})
    assert_one_line_error(
        run_cli("card", folder),
        f"adapter_config.json: key {key!r} must be {expected}, not {value!r}",
        "fix the value or save the adapter again",
    )


def test_a_config_that_is_not_an_object_says_how_to_fix_it(run_cli, copy_of) -> None:
    folder = copy_of("lora_qv")
    (folder / "adapter_config.json").write_text("[1, 2]")
    assert_one_line_error(run_cli("card", folder), "expected a JSON object", "save the adapter")


def test_files_beside_the_adapter_that_are_not_utf8_are_one_line(run_cli, copy_of, tmp_path):
    folder = copy_of("lora_qv")
    save_tokenizer(folder, tokens=64)
    (folder / "chat_template.jinja").write_bytes(b"{{ messages \xff }}")
    assert_one_line_error(
        run_cli("card", folder), "chat_template.jinja: not UTF-8 text (byte 12)", "as UTF-8"
    )
    (tmp_path / "train.yaml").write_bytes(b"learning_rate: \xff\n")
    assert_one_line_error(
        run_cli("card", copy_of("dora"), "--training", tmp_path / "train.yaml"),
        "train.yaml: not UTF-8 text (byte 15)",
    )


def test_a_damaged_base_folder_is_one_line_about_the_base(peft_adapters, run_cli, tmp_path):
    adapter = peft_adapters["lora_qv"].path
    base = Path(shutil.copytree(adapter.parent / "base", tmp_path / "base"))
    weights = base / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-3])
    result = run_cli("card", adapter, "--base", base)
    assert_one_line_error(result, "model.safetensors: not a valid safetensors file",
                          "the base's weights are damaged")  # fmt: skip
    assert "save the adapter again" not in result.stderr
    for index in ("[1]", '{"weight_map": {"lm_head.weight": 5}}'):
        (base / "model.safetensors.index.json").write_text(index)
        assert_one_line_error(run_cli("card", adapter, "--base", base),
                              "model.safetensors.index.json: no 'weight_map'")  # fmt: skip


def _corrupt(folder: Path, how: str) -> None:
    path = folder / "adapter_model.safetensors"
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    if how == "truncated":
        path.write_bytes(data[:-5])
    elif how == "header_length":
        path.write_bytes(struct.pack("<Q", len(data) * 2) + data[8:])
    elif how == "header_json":
        path.write_bytes(data[:8] + b"{" * length + data[8 + length :])
    elif how == "tiny":
        path.write_bytes(b"\x01\x02")
    elif how == "offsets":
        header = json.loads(data[8 : 8 + length])
        name = sorted(k for k in header if k != "__metadata__")[0]
        header[name]["data_offsets"][1] += 4
        text = json.dumps(header).encode()
        path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + length :])


@pytest.mark.parametrize("how", ["truncated", "header_length", "header_json", "tiny", "offsets"])
def test_corrupt_safetensors_is_one_line_and_safetensors_agrees(run_cli, copy_of, how) -> None:
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    folder = copy_of("lora_qv")
    _corrupt(folder, how)
    with pytest.raises((SafetensorError, ValueError, OSError)):
        load_file(str(folder / "adapter_model.safetensors"))
    assert_one_line_error(
        run_cli("card", folder), "adapter_model.safetensors: not a valid safetensors"
    )


def test_negative_zeros_are_zeros_and_one_nonzero_value_is_not(copy_of) -> None:
    folder = copy_of("untrained")
    weights = folder / "adapter_model.safetensors"
    tensors = _tensors_of(weights)
    negated = {k: (-v if "lora_B" in k else v) for k, v in tensors.items()}  # -0.0 everywhere
    _write_safetensors(weights, negated, sorted(negated), pad=0)
    assert "empty_adapter" in codes(adapter_card(folder))
    name = sorted(k for k in tensors if "lora_B" in k)[-1]
    negated[name] = negated[name].copy()
    negated[name].flat[-1] = 1e-3
    _write_safetensors(weights, negated, sorted(negated), pad=0)
    assert "empty_adapter" not in codes(adapter_card(folder))


def test_another_peft_method_is_counted_not_described(tmp_path) -> None:
    from peft import IA3Config, get_peft_model
    from peft_adapters import _model

    config = IA3Config(target_modules=["k_proj", "down_proj"], feedforward_modules=["down_proj"])
    model = get_peft_model(_model(), config)
    model.save_pretrained(str(tmp_path / "ia3"))
    card = adapter_card(tmp_path / "ia3")
    assert card.trainable_params == model.get_nb_trainable_parameters()[0]
    assert card.lora is None and card.modules == []
    assert codes(card) == ["unpinned_base", "unsupported_peft_type"]
