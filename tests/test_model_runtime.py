"""Device and dtype choices on a GPU, with torch's CUDA queries replaced (no GPU here).

``--device auto`` must pick CUDA when torch sees one, and ``--dtype auto``
must follow the saved dtype there, falling back from bf16 to fp16 on a GPU
that only emulates bf16 (``torch.cuda.is_bf16_supported()`` alone says True
on a T4). The fakes answer as torch's own functions do on each GPU class.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from evalkit.errors import DeviceUnavailable, UsageError  # noqa: E402
from evalkit.model import runtime  # noqa: E402


def _gpu(monkeypatch: pytest.MonkeyPatch, *, capability: int, emulates_bf16: bool) -> None:
    """A GPU of compute capability ``capability``.0, as torch.cuda reports it."""

    def is_bf16_supported(including_emulation: bool = True) -> bool:
        return capability >= 8 or (including_emulation and emulates_bf16)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", is_bf16_supported)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (capability, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: f"GPU sm_{capability}0")


def test_auto_picks_cuda_when_torch_sees_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    _gpu(monkeypatch, capability=8, emulates_bf16=True)
    assert runtime.resolve_device("auto") == "cuda"
    assert runtime.resolve_device("cpu") == "cpu"


def test_auto_is_the_cpu_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert runtime.resolve_device("auto") == "cpu"
    with pytest.raises(DeviceUnavailable, match=r"^device='cuda': no CUDA GPU.*use device='cpu'$"):
        runtime.resolve_device("cuda")
    with pytest.raises(UsageError, match=r"^device 'tpu': use one of"):
        runtime.resolve_device("tpu")


@pytest.mark.parametrize(
    ("config", "ampere", "turing"),
    [
        ({"dtype": "bfloat16"}, "bfloat16", "float16"),
        ({"torch_dtype": "bfloat16"}, "bfloat16", "float16"),
        ({"torch_dtype": "torch.bfloat16"}, "bfloat16", "float16"),
        ({"dtype": "float16"}, "float16", "float16"),
        ({"dtype": "float32"}, "float32", "float32"),
        ({}, "float32", "float32"),
    ],
)
def test_auto_dtype_on_cuda_follows_the_saved_dtype(
    monkeypatch: pytest.MonkeyPatch, config: dict[str, Any], ampere: str, turing: str
) -> None:
    _gpu(monkeypatch, capability=8, emulates_bf16=True)
    assert runtime.resolve_dtype("auto", "cuda", config) == ampere
    # A T4 (sm_75): is_bf16_supported() is True by emulation, yet bf16 is not native.
    _gpu(monkeypatch, capability=7, emulates_bf16=True)
    assert torch.cuda.is_bf16_supported()
    assert runtime.resolve_dtype("auto", "cuda", config) == turing
    assert runtime.resolve_dtype("auto", "cpu", config) == "float32"


def test_an_older_torch_without_the_emulation_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    _gpu(monkeypatch, capability=7, emulates_bf16=True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)  # torch < 2.4
    assert runtime.resolve_dtype("auto", "cuda", {"dtype": "bfloat16"}) == "float16"


def test_explicit_dtypes(monkeypatch: pytest.MonkeyPatch) -> None:
    _gpu(monkeypatch, capability=7, emulates_bf16=True)
    assert runtime.resolve_dtype("bfloat16", "cuda") == "bfloat16"  # asked for: emulated
    _gpu(monkeypatch, capability=6, emulates_bf16=False)
    with pytest.raises(DeviceUnavailable, match=r"GPU sm_60.*no bfloat16 support"):
        runtime.resolve_dtype("bfloat16", "cuda")
    assert runtime.resolve_dtype("float16", "cuda") == "float16"
    with pytest.raises(UsageError, match=r"^dtype 'int8': use one of"):
        runtime.resolve_dtype("int8", "cuda")
    assert runtime.torch_dtype("bfloat16") is torch.bfloat16


def test_running_out_of_gpu_memory_while_decoding_is_one_line(
    run_cli, tiny, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's OutOfMemoryError names the batch and the fix, exit 2, not an internal error."""
    from conftest import assert_one_line_error

    from evalkit.model import decode

    real = decode.decode_batch
    calls: list[int] = []

    def second_batch_runs_out(loaded: Any, prompts: Any, settings: Any, **kw: Any) -> Any:
        calls.append(len(prompts))
        if len(calls) == 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(loaded, prompts, settings, **kw)

    monkeypatch.setattr(decode, "decode_batch", second_batch_runs_out)
    out = tmp_path / "run"
    result = run_cli("generate", "--base", tiny.base, "--adapter", tiny.adapter, "--data",
                     tiny.data, "--id", "ticket_id", "--text", "messages", "--out", out,
                     "--max-new-tokens", 2, "--batch-size", 4, "--device", "cpu")  # fmt: skip
    assert_one_line_error(result, "ran out of memory decoding batch 2 of 3", "(4 prompts",
                          "up to 2 new", "Tried to allocate 2.00 GiB",
                          "lower --batch-size (it was 4) or --max-new-tokens")  # fmt: skip
    assert not out.exists()


def test_running_out_of_gpu_memory_attaching_an_adapter_is_not_another_base(
    tiny, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch.OutOfMemoryError is a RuntimeError, which a shape mismatch raises too."""
    import peft

    from evalkit.errors import AdapterMismatch, OutOfDeviceMemory
    from evalkit.model.load import attach_adapter, load_base

    assert issubclass(torch.OutOfMemoryError, RuntimeError)

    def out_of_memory(*args: Any, **kwargs: Any) -> Any:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")

    loaded = load_base(tiny.base, device="cpu", dtype="float32")
    monkeypatch.setattr(peft.PeftModel, "from_pretrained", out_of_memory)
    with pytest.raises(OutOfDeviceMemory, match="ran out of memory putting this adapter") as caught:
        attach_adapter(loaded, tiny.adapter)
    assert not isinstance(caught.value, AdapterMismatch)
