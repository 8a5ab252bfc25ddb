"""Untrusted code (handlers, seed builders) run under an allow-list, resource limits and an audit hook."""
