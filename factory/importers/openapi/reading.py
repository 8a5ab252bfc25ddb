"""Reading an API document as published: real documents are written by many tools, and YAML that other parsers
accept must not cost the document. Unlike a spec (read strictly by `envfarm.factory.spec.read_document`), an API
document is read leniently:

- timestamps stay the strings they are written as (an example `2019-01-01T24:00:00Z` is no valid datetime and
  crashed the import; a date is text to the importer anyway);
- `=` (YAML 1.1's `value` type, an operator in an enum) and tags the importer has no use for (`!include`,
  `!!python/tuple`) are read as the plain scalar, list or map they tag;
- control characters YAML forbids (pasted from a word processor) become spaces;
- an anchor defined twice takes its later definition, as YAML 1.2 says (PyYAML refuses it);
- a key given twice keeps its last value, bytes that are not UTF-8 are replaced, a BOM is dropped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent

from envfarm.factory.importers.openapi.models import OpenAPIError

_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ufffe\uffff]")


def _plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    """A tagged node as the untagged data it holds."""
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else None


def _lenient(base: type[yaml.SafeLoader]) -> type[yaml.SafeLoader]:
    class Lenient(base):  # type: ignore[valid-type,misc]
        pass

    Lenient.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_scalar)
    Lenient.add_constructor("tag:yaml.org,2002:value", yaml.SafeLoader.construct_scalar)
    Lenient.add_multi_constructor("", _plain)
    return Lenient


class _RedefiningLoader(yaml.SafeLoader):
    """PyYAML's loader, letting an anchor be defined again (the later definition serves the aliases after it)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if not isinstance(event, AliasEvent) and getattr(event, "anchor", None) in self.anchors:
            del self.anchors[event.anchor]
        return super().compose_node(parent, index)


_FAST = _lenient(getattr(yaml, "CSafeLoader", yaml.SafeLoader))
_REDEFINING = _lenient(_RedefiningLoader)


def read_api_document(path: Path) -> Any:
    """The document at `path` as data; `OpenAPIError` (one line, naming the file) when it is not JSON or YAML."""
    try:
        text = path.read_bytes().decode("utf-8-sig", errors="replace")
    except OSError as exc:
        raise OpenAPIError(f"{path}: {exc.strerror or exc}") from exc
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise OpenAPIError(f"{path}: not valid JSON: {_one_line(exc)}") from exc
    text = _FORBIDDEN.sub(" ", text)
    try:
        try:
            return yaml.load(text, Loader=_FAST)  # noqa: S506 - a safe loader with lenient constructors
        except yaml.composer.ComposerError as exc:
            if "duplicate anchor" not in str(exc):
                raise
            return yaml.load(text, Loader=_REDEFINING)  # noqa: S506 - the same, in pure Python
    except (yaml.YAMLError, RecursionError) as exc:
        raise OpenAPIError(f"{path}: not valid YAML: {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
