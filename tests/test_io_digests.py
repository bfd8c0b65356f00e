"""Digests started early (beside a command's imports) are the digests of the files read.

The reference is hashlib over the file's bytes at the moment the digest is
asked for: an early digest is used only for the same, unchanged file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from evalkit.errors import UnreadableFile
from evalkit.io import hash_early, sha256_file


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_early_digest_is_the_files_digest(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(os.urandom(3 << 20))
    hash_early([path, tmp_path / "missing.jsonl", tmp_path])  # only files are hashed
    assert sha256_file(path) == _digest(path)
    assert sha256_file(path) == _digest(path)  # asked again: hashed again, same digest


def test_a_file_changed_after_the_early_digest_is_hashed_again(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    hash_early([path])
    path.write_bytes(b'{"a": 2}\n{"a": 3}\n')
    assert sha256_file(path) == _digest(path)
    same_size = tmp_path / "same.jsonl"
    same_size.write_bytes(b"x" * 100)
    hash_early([same_size])
    same_size.write_bytes(b"y" * 100)
    os.utime(same_size, ns=(1, 1))  # a different modification time
    assert sha256_file(same_size) == _digest(same_size)


def test_an_unreadable_file_fails_where_the_digest_is_asked_for(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile, match=r"missing\.jsonl: no such file"):
        sha256_file(tmp_path / "missing.jsonl")
