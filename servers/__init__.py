"""The farm: one package per generated MCP server, plus the `runtime` they share.

`servers` also picks up the `servers/` folders of other farms on sys.path (e.g. `envfarm build --out
DIR`, run with PYTHONPATH=DIR), and those come first: a server built into another farm shadows the
one of the same name here, while `servers.runtime` still resolves to this package's runtime.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
__path__ = __path__[1:] + __path__[:1]
