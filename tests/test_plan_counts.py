"""Parameter counts against the models transformers builds and the adapters PEFT makes.

Each published config is built on the meta device (no memory, no download)
with two layers instead of its full depth, which keeps every width, bias
and norm of the family while staying fast; the counts scale by layers
alone, and the full-depth Llama-2-7B is checked too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalkit.plan.config import parse_config
from evalkit.plan.counts import lora_parameters, parameter_counts
from evalkit.plan.options import resolve_options

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# PEFT calls a transformers method that transformers deprecates: not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((Path(__file__).resolve().parent / "plan_configs").glob("*.json")) + sorted(
    (ROOT / "examples" / "plan").glob("*/config.json")
)


def _name(path: Path) -> str:
    return path.parent.name if path.name == "config.json" else path.stem


def _meta_model(data: dict[str, object]):
    config = transformers.AutoConfig.for_model(**data)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


def _shallow(path: Path) -> dict[str, object]:
    return {**json.loads(path.read_text()), "num_hidden_layers": 2}


@pytest.mark.parametrize("path", CONFIGS, ids=_name)
def test_total_parameters_match_transformers(path: Path) -> None:
    data = _shallow(path)
    model = _meta_model(data)
    expected = sum(parameter.numel() for parameter in model.parameters())  # tied: counted once
    assert parameter_counts(parse_config(data, path)).total == expected


@pytest.mark.parametrize("path", CONFIGS, ids=_name)
@pytest.mark.parametrize("targets", [None, "all-linear"])
def test_lora_parameters_match_peft(path: Path, targets: str | None) -> None:
    data = _shallow(path)
    shape = parse_config(data, path)
    options = resolve_options(shape, method="lora", r=8, targets=targets)
    wrapped = peft.get_peft_model(
        _meta_model(data),
        peft.LoraConfig(r=8, target_modules="all-linear" if targets else list(options.targets)),
    )
    trainable, _ = wrapped.get_nb_trainable_parameters()
    assert lora_parameters(shape, options.targets, 8) == trainable


def test_all_linear_leaves_the_output_head_out_as_peft_does() -> None:
    path = ROOT / "examples" / "plan" / "llama-3.2-3b" / "config.json"
    data = _shallow(path)
    wrapped = peft.get_peft_model(
        _meta_model(data), peft.LoraConfig(r=4, target_modules="all-linear")
    )
    adapted = {
        name.rsplit(".", 1)[-1]
        for name, module in wrapped.named_modules()
        if hasattr(module, "lora_A")
    }
    shape = parse_config(data, path)
    assert adapted == set(resolve_options(shape, targets="all-linear").targets)
    assert "lm_head" not in adapted


def test_llama2_7b_at_full_depth() -> None:
    path = ROOT / "examples" / "plan" / "llama-2-7b" / "config.json"
    data = json.loads(path.read_text())
    shape = parse_config(data, path)
    model = _meta_model(data)
    assert parameter_counts(shape).total == sum(p.numel() for p in model.parameters())
    assert parameter_counts(shape).total == 6_738_415_616
    # r x (d_in + d_out) on q and v, 32 layers: the figure litgpt's tables and PEFT print.
    assert lora_parameters(shape, ("q_proj", "v_proj"), 8) == 32 * 2 * 8 * (4096 + 4096)
    assert lora_parameters(shape, ("q_proj", "v_proj"), 8) == 4_194_304


def test_tied_embeddings_are_counted_once() -> None:
    path = ROOT / "examples" / "plan" / "llama-3.2-3b" / "config.json"
    data = json.loads(path.read_text())
    counts = parameter_counts(parse_config(data, path))
    untied = parameter_counts(parse_config({**data, "tie_word_embeddings": False}, path))
    assert counts.head == 0 and untied.head == 128256 * 3072
    assert untied.total - counts.total == 128256 * 3072
    assert counts.total == 3_212_749_824  # Llama-3.2-3B's published size
