"""The format version of each persisted file, checked in one place when it is read.

Every file evalkit writes carries its format's version (``format_version``,
or ``card_version`` for a card). A reader states the version it writes and
the migrations that bring an older file up to it, one step each; reading
then refuses a newer file in one line (a newer evalkit wrote it: upgrade),
upgrades an older one step by step, and refuses an older one no migration
reaches. Adding a format version is adding a migration here, beside the
model: the reading code never branches on versions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from evalkit.errors import MalformedFile

Migration = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class FileFormat:
    """A persisted format: its name, its current version and how older ones are read.

    ``migrations[v]`` turns a version-``v`` document into a version-``v + 1``
    one (the version key is set by :meth:`upgrade`).
    """

    name: str
    current: int
    key: str = "format_version"
    migrations: Mapping[int, Migration] = field(default_factory=lambda: MappingProxyType({}))

    def upgrade(self, data: dict[str, Any], source: object, hint: str = "") -> dict[str, Any]:
        """``data`` at the current version; a newer or unreadable version is one clear error.

        ``source`` names the file in the message; ``hint`` says what to do
        about a file that is not of this format at all.
        """
        version = data.get(self.key)
        tail = f"; {hint}" if hint else ""
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise MalformedFile(
                f"{source}: {self.key} must be a whole number >= 1, got {version!r} "
                f"(is this a {self.name}?){tail}"
            )
        if version > self.current:
            raise MalformedFile(
                f"{source}: {self.key} {version} is newer than this evalkit reads "
                f"({self.name} {self.current}); upgrade evalkit"
            )
        while version < self.current:
            migrate = self.migrations.get(version)
            if migrate is None:
                raise MalformedFile(
                    f"{source}: {self.key} {version} of {self.name} is no longer read "
                    f"(this evalkit reads {self.current}){tail}"
                )
            data = {**migrate(dict(data)), self.key: version + 1}
            version += 1
        return data
