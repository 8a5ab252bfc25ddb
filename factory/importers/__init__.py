"""Importers: documents written elsewhere (OpenAPI, EnvFactory metadata, a live MCP server) become spec folders."""
