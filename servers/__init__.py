"""The farm: one package per generated MCP server, plus the `runtime` they share.

`servers` also picks up `servers/` folders of other farms on sys.path (e.g. `envfarm build --out`),
so a server built elsewhere still imports `servers.runtime` from here.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
