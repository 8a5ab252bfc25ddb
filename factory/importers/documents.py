"""An OpenAPI document or EnvFactory metadata given to `envfarm build` directly, in place of a spec folder.

`envfarm.factory.source.load_environment` reads the file and, finding an API document rather than a spec,
hands it to `imported_environment` (the build passes it in): the document is imported the way `envfarm
import` does (deterministic, no model) and then built like any spec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envfarm.factory.importers.metadata import import_metadata_offline, load_metadata
from envfarm.factory.importers.openapi import OpenAPIError, import_openapi
from envfarm.factory.source import EnvironmentSource
from envfarm.factory.spec import SpecError, parse_spec


def imported_environment(path: Path, data: dict[str, Any]) -> EnvironmentSource:
    """The source an API document at `path` (already read as `data`) imports to."""
    try:
        if "class_name" in data:
            result = import_metadata_offline(load_metadata(path)[0], path)
        else:
            result = import_openapi(path)
    except OpenAPIError as exc:
        raise SpecError(str(path), [("", str(exc))]) from exc
    return EnvironmentSource(
        spec=parse_spec({**result.spec, "policy": result.policy}, str(path)), spec_path=path, handlers=None
    )
