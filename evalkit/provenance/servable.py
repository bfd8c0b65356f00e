"""Whether vLLM serves an adapter as it is: the card's ``servable`` block, without vLLM.

People evaluate an adapter with transformers and serve it with vLLM, which
refuses some adapters when they are loaded and silently serves others
differently. These rules are read from vLLM's own source (release
:data:`VLLM_RULES`), so a card says it before a server is rented:

* ``vllm/lora/peft_helper.py`` (``PEFTHelper._validate_features`` and
  ``validate_legal``): ``modules_to_save`` other than a classifier head
  (vllm#9280: axolotl's Llama-3 example saves ``embed_tokens`` and
  ``lm_head``), DoRA, ``lora_bias``, a bias other than ``none``, inits that
  change the base (PiSSA, OLoRA, CorDA, LoftQ), aLoRA, layer replication,
  BD-LoRA, QALoRA, and a rank above ``max_lora_rank`` (at most 512:
  ``vllm/config/lora.py``, ``MaxLoRARanks``);
* ``vllm/lora/utils.py`` (``parse_fine_tuned_lora_name``,
  ``is_base_embedding_weights``) and ``lora_model.py``: a tensor that is not a
  LoRA pair is refused (trainable tokens, vllm#36501; an embedding saved as
  ``embed_tokens.weight``), except ``*.embed_tokens.base_layer.weight`` and
  ``*.lm_head.base_layer.weight``, which are skipped: the base's rows serve,
  so a resized vocabulary is served without its new rows;
* ``get_supported_lora_modules``: vLLM adapts linear layers and the
  embeddings its model declares, never a convolution.

Pure Python over what the card read (the config, the modules, the whole
tensors), so the check runs in milliseconds and needs no vLLM.
"""

from __future__ import annotations

from evalkit.provenance.adapter_config import AdapterConfig
from evalkit.records._card import FullTensor, ModuleInfo, Servability, ServingProblem

VLLM_RULES = "vllm 0.32.0"
VLLM_RANKS: tuple[int, ...] = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The ranks vLLM's ``max_lora_rank`` may take (``vllm.config.lora.MaxLoRARanks``)."""
CLASSIFIER_HEADS = ("classifier", "score")
"""The only ``modules_to_save`` vLLM serves (classification models)."""
EMBEDDINGS = ("embed_tokens", "lm_head", "wte", "word_embeddings", "embed_in", "embed_out")
# init_lora_weights values that set the first weights only (a plain LoRA once saved).
_PLAIN_INITS = ("gaussian", "eva", "orthogonal", "mica", "lora_ga")
# Keys of features vLLM refuses (PEFTHelper._validate_features), with their words.
_FEATURES = {
    "alora_invocation_tokens": "Activated LoRA (aLoRA)",
    "layer_replication": "layer_replication",
    "use_bdlora": "block-diagonal LoRA (BD-LoRA)",
    "use_qalora": "QALoRA",
}
_MERGE = "merge it (PEFT merge_and_unload) and serve the merged model"


def vllm_rank(rank: int) -> int | None:
    """The smallest rank vLLM allows at or above ``rank`` (None above its largest)."""
    return next((allowed for allowed in VLLM_RANKS if allowed >= rank), None)


def _problem(code: str, message: str) -> ServingProblem:
    return ServingProblem(code=code, message=message)


def _modules_to_save(config: AdapterConfig) -> list[ServingProblem]:
    saved = [name for name in config.modules_to_save or [] if name not in CLASSIFIER_HEADS]
    if not saved:
        return []
    embeddings = [name for name in saved if name.rsplit(".", 1)[-1] in EMBEDDINGS]
    what = (
        f"the embeddings ({', '.join(embeddings)}), trained in full"
        if embeddings
        else "modules trained in full"
    )
    return [
        _problem(
            "modules_to_save",
            f"modules_to_save holds {', '.join(saved)}: vLLM refuses an adapter with "
            f"{what} (it serves only a classifier/score head); target them with LoRA "
            f"instead, or {_MERGE}",
        )
    ]


def _features(config: AdapterConfig) -> list[ServingProblem]:
    found = []
    if config.use_dora:
        found.append(_problem("dora", f"use_dora is true: vLLM does not serve DoRA; {_MERGE}"))
    if config.lora_bias:
        found.append(
            _problem("lora_bias", f"lora_bias is true: vLLM does not serve a LoRA bias; {_MERGE}")
        )
    if config.bias != "none":
        found.append(
            _problem(
                "bias",
                f"bias is {config.bias!r}: vLLM serves no trained bias (only bias 'none'); "
                f"{_MERGE}",
            )
        )
    init = config.init_lora_weights
    if isinstance(init, str) and init.lower() not in _PLAIN_INITS:
        found.append(
            _problem(
                "init_weights",
                f"init_lora_weights is {init!r}: this init changes the base weights, which vLLM "
                "does not; convert it to a plain LoRA (PEFT's "
                "path_initial_model_for_weight_conversion) or serve the changed base",
            )
        )
    for key, words in _FEATURES.items():
        if config.raw.get(key) not in (None, False, [], {}):
            found.append(
                _problem("unsupported_feature", f"{key} is set: vLLM does not serve {words}")
            )
    return found


def _ranks(config: AdapterConfig, modules: list[ModuleInfo]) -> tuple[int, list[ServingProblem]]:
    largest = max([config.r, *config.rank_pattern.values(), *(m.r for m in modules)])
    if vllm_rank(largest) is not None:
        return largest, []
    return largest, [
        _problem(
            "rank_above_max",
            f"the adapter's rank {largest} is above vLLM's largest max_lora_rank "
            f"{VLLM_RANKS[-1]}; vLLM refuses it: {_MERGE}",
        )
    ]


def _tensors(
    config: AdapterConfig,
    modules: list[ModuleInfo],
    full: list[FullTensor],
    base_rows: int | None,
) -> list[ServingProblem]:
    found = []
    tokens = [t.name for t in full if t.role == "trainable_tokens"]
    if tokens or config.raw.get("trainable_token_indices"):
        where = tokens[0] if tokens else "trainable_token_indices"
        found.append(
            _problem(
                "trainable_tokens",
                f"{where}: trainable tokens (trainable_token_indices) are not a LoRA pair, "
                f"and vLLM refuses them; {_MERGE}",
            )
        )
    for tensor in full:
        if tensor.role != "saved_embedding":
            continue
        if not tensor.name.endswith(".base_layer.weight"):
            found.append(
                _problem(
                    "saved_embedding",
                    f"{tensor.name}: an embedding saved in full, which vLLM refuses (it loads "
                    f"LoRA pairs only); {_MERGE}",
                )
            )
        elif base_rows is not None and tensor.shape and tensor.shape[0] != base_rows:
            found.append(
                _problem(
                    "resized_embedding",
                    f"{tensor.name} has {tensor.shape[0]} rows, the base {base_rows}: vLLM "
                    "skips saved embeddings and serves the base's, so the resized vocabulary "
                    f"is not what it serves; {_MERGE}",
                )
            )
    convs = [module.name for module in modules if module.kind == "conv"]
    if convs:
        found.append(
            _problem(
                "unsupported_module",
                f"{convs[0]} is a convolution: vLLM adapts linear and embedding layers only"
                + (f" ({len(convs)} such modules)" if len(convs) > 1 else ""),
            )
        )
    return found


def vllm_servability(
    config: AdapterConfig,
    modules: list[ModuleInfo],
    full: list[FullTensor],
    *,
    base_rows: int | None = None,
) -> Servability:
    """Whether vLLM serves the adapter, every rule it breaks, and the ``max_lora_rank`` it needs.

    ``base_rows`` (the base's embedding rows, when the card was made with
    ``--base``) tells a resized vocabulary from an embedding saved as it was.
    """
    if not config.is_lora:
        problem = _problem(
            "not_lora", f"peft_type {config.peft_type}: vLLM serves LoRA adapters only"
        )
        return Servability(vllm=False, problems=[problem], max_lora_rank=None, rules=VLLM_RULES)
    largest, problems = _ranks(config, modules)
    problems = _modules_to_save(config) + _features(config) + problems
    problems += _tensors(config, modules, full, base_rows)
    return Servability(
        vllm=not problems,
        problems=problems,
        max_lora_rank=vllm_rank(largest),
        rules=VLLM_RULES,
    )
