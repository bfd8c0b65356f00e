"""The card's ``servable.vllm`` agrees with vLLM's own code on peft's adapters.

vLLM decides when it loads an adapter: ``PEFTHelper.validate_legal`` (its
config rules, against a ``LoRAConfig`` at the largest rank it allows) and
``parse_fine_tuned_lora_name`` on every tensor (what is not a LoRA pair is
refused, saved base embeddings skipped). Both are called here on each
adapter, with no engine, and their verdict is the card's. Runs where vLLM is
installed (``make unit-vllm``).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("needs vLLM: make unit-vllm runs these in .venv-vllm", allow_module_level=True)

from peft_adapters import VARIANTS, build_one, edit_config

from evalkit.provenance.card import adapter_card

pytestmark = pytest.mark.vllm

EDITS = {
    "r600": {"r": 600},
    "pissa": {"init_lora_weights": "pissa"},
    "gaussian": {"init_lora_weights": "gaussian"},
    "lora_bias": {"lora_bias": True},
    "qalora": {"use_qalora": True},
    "replication": {"layer_replication": [[0, 2]]},
    "score_head": {"modules_to_save": ["score"]},
}


def vllm_accepts(folder: Path) -> bool:
    """Whether vLLM's own checks load the adapter (True) or raise (False)."""
    from safetensors import safe_open
    from vllm.config.lora import LoRAConfig
    from vllm.lora.peft_helper import PEFTHelper
    from vllm.lora.utils import is_base_embedding_weights, parse_fine_tuned_lora_name

    try:
        helper = PEFTHelper.from_local_dir(str(folder), None)
        helper.validate_legal(LoRAConfig(max_lora_rank=512))
        with safe_open(str(folder / "adapter_model.safetensors"), framework="pt") as weights:
            for name in weights.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                if not is_base_embedding_weights(name):
                    parse_fine_tuned_lora_name(name)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_peft_variant(peft_adapters, name) -> None:
    folder = peft_adapters[name].path
    assert adapter_card(folder).servable.vllm is vllm_accepts(folder)


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_each_config_rule(peft_adapters, tmp_path, edit) -> None:
    folder = Path(shutil.copytree(peft_adapters["lora_qv"].path, tmp_path / edit))
    edit_config(folder, **EDITS[edit])
    assert adapter_card(folder).servable.vllm is vllm_accepts(folder)


def test_trainable_tokens(tmp_path) -> None:
    settings = {"r": 4, "target_modules": ["q_proj"], "trainable_token_indices": [1, 2]}
    folder = build_one(tmp_path, "tokens", settings).path
    assert adapter_card(folder).servable.vllm is vllm_accepts(folder) is False
