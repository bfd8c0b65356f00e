"""Pickled weights (``adapter_model.bin``, torch.save's zip format) read without torch, bounded.

Each storage record's size, as the zip's directory declares it, is checked
against the shapes the pickle declares before any record is read, so a zip
bomb (a few MB that inflate to gigabytes) is refused from the directory
alone, by the card and before transformers or PEFT open the file. Honest
files, views into a larger storage and storages shared by two tensors, read
as torch itself reads them.
"""

from __future__ import annotations

import tracemalloc
import zipfile
from pathlib import Path

import pytest
from conftest import assert_one_line_error
from model_fixtures import TinyModels

torch = pytest.importorskip("torch")

from evalkit.errors import CorruptWeights  # noqa: E402
from evalkit.provenance.safetensors_file import tensor_bytes  # noqa: E402
from evalkit.provenance.torch_pickle import check_archive, read_legacy_weights  # noqa: E402

BOMB_BYTES = 64 << 20  # a record that inflates to 64 MiB (from about 64 KiB)


def _save(path: Path, state: dict) -> Path:
    torch.save(state, str(path))
    return path


def _rewrite(source: Path, target: Path, record: str, data_size: int) -> Path:
    """``source`` with its storage ``record`` replaced by ``data_size`` zero bytes, deflated
    (what a zip bomb is); every other entry (the pickle first) as it was."""
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as out:
        for info in original.infolist():
            if not info.filename.endswith(f"/data/{record}"):
                out.writestr(info, original.read(info.filename))
                continue
            bomb = zipfile.ZipInfo(info.filename, info.date_time)
            bomb.compress_type = zipfile.ZIP_DEFLATED
            with out.open(bomb, "w", force_zip64=True) as handle:
                left = data_size
                while left:  # written in chunks: never the whole record in memory
                    handle.write(chunk[: min(left, len(chunk))])
                    left -= min(left, len(chunk))
    return target


def _small_state() -> dict:
    return {"lora_A": torch.ones(4, 8), "lora_B": torch.zeros(8, 4)}


def _bomb(tmp_path: Path) -> Path:
    honest = _save(tmp_path / "honest.bin", _small_state())
    return _rewrite(honest, tmp_path / "adapter_model.bin", "0", BOMB_BYTES)


def test_the_bomb_is_a_bomb(tmp_path: Path) -> None:
    """The reference: the file is small, and its record really inflates to 64 MiB."""
    bomb = _bomb(tmp_path)
    assert bomb.stat().st_size < BOMB_BYTES // 200
    with zipfile.ZipFile(bomb) as archive:
        record = next(i for i in archive.infolist() if i.filename.endswith("/data/0"))
        assert record.file_size == BOMB_BYTES
        assert record.compress_type == zipfile.ZIP_DEFLATED


def test_a_bomb_is_refused_from_the_directory_alone(tmp_path: Path, monkeypatch) -> None:
    bomb = _bomb(tmp_path)
    opened: list[str] = []
    real_open = zipfile.ZipFile.open

    def spy(self, name, *args, **kwargs):
        opened.append(name if isinstance(name, str) else name.filename)
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    tracemalloc.start()
    with pytest.raises(CorruptWeights) as refused:
        read_legacy_weights(bomb)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert f"declares {BOMB_BYTES} bytes" in refused.value.message
    assert "shapes make 128" in refused.value.message  # lora_A: 4 x 8 float32
    assert not any("/data/" in name for name in opened), opened  # no tensor record read
    assert peak < 8 << 20


def test_a_bomb_whose_shapes_agree_is_refused_by_the_files_size(tmp_path: Path) -> None:
    """Declared shapes that match the inflated record: the total is checked against the file."""
    numel = BOMB_BYTES // 4
    honest = _save(tmp_path / "honest.bin", {"big": torch.zeros(numel)})
    # The honest file is as large as its tensor; the bomb holds the same record deflated.
    bomb = _rewrite(honest, tmp_path / "adapter_model.bin", "0", BOMB_BYTES)
    assert bomb.stat().st_size < BOMB_BYTES // 200
    with pytest.raises(CorruptWeights, match="times the file's"):
        check_archive(bomb)
    check_archive(honest)  # the same tensor stored as torch.save stores it is fine


def test_views_and_shared_storages_read_as_torch_reads_them(tmp_path: Path) -> None:
    base = torch.arange(24, dtype=torch.float16)
    state = {
        "slice": base[3:9],  # a view into a larger storage: the whole storage is saved
        "matrix": base.view(4, 6),  # the same storage again
        "other": torch.ones(2, 3, dtype=torch.bfloat16),
    }
    path = _save(tmp_path / "views.bin", state)
    reference = torch.load(str(path), weights_only=True)
    header, context = read_legacy_weights(path)
    with context as view:
        for name, tensor in reference.items():
            info = header.tensors[name]
            assert info.shape == tuple(tensor.shape)
            expected = tensor.contiguous().view(torch.uint8).numpy().tobytes()
            assert bytes(tensor_bytes(view, header, info)) == expected, name


def test_a_tensor_past_its_storage_is_refused(tmp_path: Path) -> None:
    honest = _save(tmp_path / "honest.bin", _small_state())
    short = tmp_path / "short.bin"
    with zipfile.ZipFile(honest) as original, zipfile.ZipFile(short, "w") as out:
        for info in original.infolist():
            data = original.read(info.filename)
            out.writestr(info, data[:-4] if info.filename.endswith("/data/0") else data)
    with pytest.raises(CorruptWeights, match="declares 124 bytes but its tensors' shapes make"):
        check_archive(short)


def test_generate_refuses_a_bombed_adapter_before_peft_opens_it(
    run_cli, tiny: TinyModels, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    adapter = tiny.copy("adapter", tmp_path)
    weights = adapter / "adapter_model.safetensors"
    honest = _save(tmp_path / "honest.bin", load_file(str(weights)))
    weights.unlink()
    bomb = _rewrite(honest, adapter / "adapter_model.bin", "0", BOMB_BYTES)
    result = run_cli("generate", "--base", tiny.base, "--adapter", adapter, "--data", tiny.data,
                     "--id", "ticket_id", "--text", "messages", "--out", tmp_path / "o",
                     "--max-new-tokens", 1, "--device", "cpu")  # fmt: skip
    assert_one_line_error(result, str(bomb), f"declares {BOMB_BYTES} bytes", "zip bomb")
    assert_one_line_error(run_cli("card", adapter), str(bomb), "zip bomb")
