"""The farm: one package per generated MCP server, plus the `runtime` they share.

`python -m envfarm.servers.<name>` runs a server of this installed farm. A server of another farm (a folder
built with `envfarm build --out DIR`) is imported by location, never found on sys.path:
`envfarm --farm DIR serve <name>` loads `DIR/servers/<name>/` as the package `envfarm.servers.<name>`
(see `envfarm.servers.runtime.farm.import_server`), on this installation's runtime.
"""
