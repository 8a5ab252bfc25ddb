"""Importers: API descriptions, tool metadata, a live MCP server and folders of documents become spec folders."""
