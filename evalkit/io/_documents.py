"""The one loader of JSON and YAML documents: contracts, configs, cards, manifests.

Every document evalkit reads (a contract, a model's ``config.json``, a card,
a split's ``manifest.json``, training settings, a run record) goes through
:func:`load_json` or :func:`load_yaml`, so that a hostile file meets the same
bounds everywhere:

* the file must be a regular file: a named pipe (FIFO) would block the
  command forever waiting for a writer, and a device never ends;
* nesting is limited to :data:`MAX_DEPTH` levels, checked while the text is
  read, so a 100,000-deep ``[[[[…`` is one line with exit 2 and never a
  ``RecursionError`` in whatever walks the value later;
* a key given twice in one object or mapping is refused (JSON and YAML
  would silently keep one of the two values);
* YAML aliases may not make a document larger than :data:`YAML_EXPANSION`
  times the nodes it is written with (the "billion laughs": nine lines that
  expand to 10⁹ strings), nor refer to themselves;
* YAML is read with PyYAML's safe loader (no ``!!python`` tags).

Errors are :class:`~evalkit.errors.MalformedFile` naming the file and, where
there is one, the line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit.errors import MalformedFile
from evalkit.io._files import read_bytes

MAX_DEPTH = 100
"""Deepest nesting of objects and arrays (mappings and sequences) evalkit reads."""

YAML_EXPANSION = 10
"""How many times its written nodes a YAML document may grow to once aliases are expanded."""

YAML_EXPANSION_FLOOR = 10_000
"""Expanded nodes any YAML document may have, however small it is written."""


class DocumentError(MalformedFile):
    """A JSON or YAML document breaks a rule; ``line`` is where (None when unknown)."""

    def __init__(self, source: str, line: int | None, problem: str) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.line = line
        self.problem = problem


def _text(data: bytes | str, source: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise DocumentError(
            source, None, f"not UTF-8 text (byte {error.start}); save it again as UTF-8"
        ) from error


def json_depth_exceeded(text: str, limit: int = MAX_DEPTH) -> int | None:
    """The 1-based line where ``text`` nests deeper than ``limit``, or None.

    Brackets inside strings do not count. The scan is linear and stops at the
    first excess, so the parser that follows never recurses past ``limit``.
    """
    import re

    depth = 0
    # Strings first (so their brackets are skipped), then any bracket.
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return text.count("\n", 0, match.start()) + 1
        elif token in "]}":
            depth -= 1
    return None


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(key)
            seen.add(key)
    return result


class RepeatedKey(Exception):
    """A key occurs twice in one JSON object (carries the key)."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_json(data: bytes | str, source: str) -> Any:
    """The value of a JSON document: nesting bounded, keys unique, NaN/Infinity refused."""
    text = _text(data, source)
    try:
        value = json.loads(text, object_pairs_hook=unique_object, parse_constant=_no_constant)
    except RecursionError:  # Python's parser stops at its recursion limit: far too deep
        value = _TOO_DEEP
    except json.JSONDecodeError as error:
        raise DocumentError(
            source, error.lineno, f"not valid JSON ({error.msg} at column {error.colno})"
        ) from error
    except RepeatedKey as repeated:
        line = _line_of_key(text, str(repeated.args[0]))
        raise DocumentError(
            source, line, f"key {repeated.args[0]!r} is given twice; keep one"
        ) from None
    except ValueError as error:  # NaN, Infinity
        raise DocumentError(source, None, f"not valid JSON ({error})") from error
    if value is _TOO_DEEP or nesting_depth(value) > MAX_DEPTH:
        raise DocumentError(
            source,
            json_depth_exceeded(text),
            f"not valid JSON (nested deeper than {MAX_DEPTH} levels)",
        )
    return value


_TOO_DEEP = object()


def nesting_depth(value: Any) -> int:
    """How deeply objects and arrays nest in a parsed JSON value (a scalar: 0); no recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > MAX_DEPTH:
                return deepest
        stack.extend((child, depth) for child in children if isinstance(child, dict | list))
    return deepest


def _line_of_key(text: str, key: str) -> int | None:
    """The line of the second occurrence of ``"key":`` in ``text`` (for the error)."""
    import re

    pattern = re.compile(r'"' + re.escape(json.dumps(key)[1:-1]) + r'"\s*:')
    found = list(pattern.finditer(text))
    if len(found) < 2:
        return None
    return text.count("\n", 0, found[1].start()) + 1


def load_json(path: Path, what: str = "JSON file") -> Any:
    """A JSON file's value under the rules of :func:`parse_json`."""
    return parse_json(read_bytes(path, what), str(path))


def _bounded_loader() -> type:
    """A safe YAML loader that bounds nesting and alias expansion and refuses repeated keys."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        """SafeLoader plus the bounds of this module, checked on the composed node graph."""

        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    mark = self.peek_event().start_mark
                    raise DocumentError(
                        self.name, mark.line + 1, f"nested deeper than {MAX_DEPTH} levels"
                    )
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def get_single_node(self) -> Any:
            node = super().get_single_node()
            if node is not None:
                _check_expansion(node, self.name)
            return node

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: SafeLoader's own error follows
                break
            if repeated:
                raise DocumentError(
                    loader.name,
                    key_node.start_mark.line + 1,
                    f"key {key!r} is given twice; keep one",
                )
            seen.add(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    BoundedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return BoundedLoader


def _check_expansion(root: Any, source: str) -> None:
    """Refuse a node graph that aliases expand past the bound, or that contains itself.

    Sizes are counted once per distinct node (memoised), so the check takes
    time in the written size even when the expanded size is astronomical.
    """
    import yaml

    written = 0
    expanded: dict[int, int] = {}
    deepest: dict[int, int] = {}
    on_path: set[int] = set()
    # Iterative post-order walk: (node, children visited?)
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            expanded[key] = 1 + sum(expanded[id(child)] for child in children)
            deepest[key] = 1 + max((deepest[id(child)] for child in children), default=0)
            continue
        if key in expanded:
            continue
        if key in on_path:
            line = node.start_mark.line + 1
            raise DocumentError(source, line, "an alias refers to the node that contains it")
        written += 1
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                line = child.start_mark.line + 1
                raise DocumentError(source, line, "an alias refers to the node that contains it")
            if id(child) not in expanded:
                stack.append((child, False))
    total = expanded[id(root)]
    limit = max(YAML_EXPANSION_FLOOR, YAML_EXPANSION * written)
    if total > limit:
        raise DocumentError(
            source,
            None,
            f"YAML aliases expand {written:,} written nodes to {total:,} (more than {limit:,}); "
            "write the repeated parts out, or use fewer aliases",
        )
    if deepest[id(root)] > MAX_DEPTH:
        raise DocumentError(
            source, None, f"YAML aliases nest the document deeper than {MAX_DEPTH} levels"
        )
    del yaml


def _children(node: Any) -> list[Any]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def parse_yaml(text: str, source: str) -> Any:
    """The value of a YAML document under the bounds of this module (safe tags only)."""
    import yaml

    try:
        loader = _bounded_loader()(text)
        loader.name = source
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except DocumentError:
        raise
    except RecursionError as error:  # a bound above should come first; never a traceback
        raise DocumentError(source, None, "not valid YAML (nested too deeply)") from error
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise DocumentError(source, line, f"not valid YAML ({problem})") from error


def load_yaml(path: Path, what: str = "YAML file") -> Any:
    """A YAML file's value under the rules of :func:`parse_yaml`."""
    return parse_yaml(_text(read_bytes(path, what), str(path)), str(path))


def load_document(path: Path, what: str = "file") -> Any:
    """A ``.yaml``/``.yml`` file as YAML, anything else as JSON."""
    if path.suffix.lower() in (".yaml", ".yml"):
        return load_yaml(path, what)
    return load_json(path, what)
