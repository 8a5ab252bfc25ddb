"""The export formats, named apart from the exporter: the CLI's parser lists them, and importing the
exporter (its pydantic models) there cost every `envfarm` command, `serve --all` included, ~50 ms."""

from __future__ import annotations

from typing import Literal

Format = Literal["openai", "sharegpt", "verl"]
FORMATS: tuple[Format, ...] = ("openai", "sharegpt", "verl")
