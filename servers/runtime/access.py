"""Who may use the HTTP host: bearer tokens, and the Host names a non-loopback bind answers to.

Kept apart from `http.py` (uvicorn, starlette) so command lines can parse and check these options
without loading a web server.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass

from mcp.server.transport_security import TransportSecuritySettings

TOKEN_ENV = "ENVFARM_TOKEN"  # comma-separated bearer tokens, when --token is not given


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Access:
    """Who may use the HTTP host: bearer tokens (none: anyone who can connect) and, for a
    non-loopback bind, the Host names clients use to reach it."""

    tokens: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()

    def problem(self, bind: str) -> str | None:
        """Why the host must not start on `bind` with this access, or None."""
        if is_loopback(bind):
            return None
        if not self.tokens:
            return (
                f"binding {bind} exposes every episode to the network; pass --token (or set {TOKEN_ENV}) "
                "so that requests need a bearer token"
            )
        if not self.allowed_hosts:
            return f"binding {bind} needs --allow-host NAME[:PORT] for each host name clients use (DNS-rebinding checks stay on)"
        return None

    def security(self, bind: str) -> TransportSecuritySettings | None:
        """Host/Origin checks for a non-loopback bind (the SDK sets them itself for loopback)."""
        if is_loopback(bind):
            return None
        hosts = [h if ":" in h else f"{h}:*" for h in self.allowed_hosts]
        origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        )

    def owner(self, authorization: str | None) -> str | None:
        """The owner digest of a valid `Authorization: Bearer <token>`, or None."""
        if not authorization or not authorization.lower().startswith("bearer "):
            return None
        given = authorization[7:].strip().encode()
        for token in self.tokens:
            if hmac.compare_digest(given, token.encode()):
                return hashlib.sha256(token.encode()).hexdigest()[:32]
        return None
