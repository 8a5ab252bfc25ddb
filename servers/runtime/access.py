"""Who may use the HTTP host: bearer tokens, and the Host names a non-loopback bind answers to.

Kept apart from `http.py` (uvicorn, starlette) so command lines can parse and check these options
without loading a web server.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass

from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings

TOKEN_ENV = "ENVFARM_TOKEN"  # comma-separated bearer tokens (each TOKEN or TOKEN=PRINCIPAL), when --token is not given


def parse_tokens(values: list[str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """`TOKEN` or `TOKEN=PRINCIPAL` items -> (tokens, (token, principal) pairs). A token bound to a
    principal acts as them on every server that knows them. The first `=` followed by text splits,
    so a token ending in `=` padding stays whole."""
    tokens: list[str] = []
    bound: list[tuple[str, str]] = []
    for value in (v.strip() for v in values):
        if not value:
            continue
        token, _, principal = value.partition("=")
        if principal and not principal.startswith("=") and token:
            tokens.append(token)
            bound.append((token, principal.strip()))
        else:
            tokens.append(value)
    return tuple(tokens), tuple(bound)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Access:
    """Who may use the HTTP host: bearer tokens (none: anyone who can connect), the principal a token
    acts for (`principals`: token -> principal; a token without one acts for whom its episodes say),
    and, for a non-loopback bind, the Host names clients use to reach it. It is the SDK's token verifier
    (`verify_token`) for the host's bearer middleware."""

    tokens: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    principals: tuple[tuple[str, str], ...] = ()

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
            return (
                f"binding {bind} needs --allow-host NAME[:PORT] for each host name clients use "
                "(DNS-rebinding checks stay on)"
            )
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

    def caller(self, authorization: str | None) -> tuple[str, str | None] | None:
        """(owner digest, bound principal or None) of a valid `Authorization: Bearer <token>`, or None."""
        if not authorization or not authorization.lower().startswith("bearer "):
            return None
        given = authorization[7:].strip().encode()
        for token in self.tokens:
            if hmac.compare_digest(given, token.encode()):
                principal = next((p for t, p in self.principals if t == token), None)
                return hashlib.sha256(token.encode()).hexdigest()[:32], principal
        return None

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's `TokenVerifier`: a valid token as the SDK's access token, whose `client_id` is the token's
        owner digest (the raw token is kept nowhere) and `subject` the principal it is bound to; None for
        any other token (the SDK's bearer middleware then answers 401)."""
        caller = self.caller(f"Bearer {token}")
        if caller is None:
            return None
        owner, principal = caller
        return AccessToken(token=owner, client_id=owner, scopes=[], subject=principal)

    def owner(self, authorization: str | None) -> str | None:
        """The owner digest of a valid `Authorization: Bearer <token>`, or None."""
        caller = self.caller(authorization)
        return None if caller is None else caller[0]
