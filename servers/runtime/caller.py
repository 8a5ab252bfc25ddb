"""Who makes a request and which episode it works on, read once per request from the SDK's public surfaces.

- **The bearer token** is the SDK's access-token context (`get_access_token()`): on HTTP with tokens the
  SDK's bearer middleware checks the token with the farm's verifier (`Access.verify_token`) and its
  `AuthContextMiddleware` puts the result there; the SDK carries it to the handler with the request. The
  token's `client_id` is its owner digest (an episode belongs to the token that opened it), its `subject`
  the principal it is bound to. No token (stdio, in-memory, HTTP without tokens): no owner, no principal.
- **The episode**, in order:
  1. `_meta["envfarm/episode"]` of the request (every transport and protocol era), or the control plane's
     `episode` parameter;
  2. the per-episode URL `/<server>/episodes/<id>/mcp`: the farm host's ASGI middleware puts the id in
     `EPISODE_URL`, a context variable the SDK carries to the handler the way it carries the access token;
  3. the 2025-era HTTP session (`Mcp-Session-Id`, one episode per session). The SDK keeps a session's id on
     its connection object, which no handler context exposes, so the id is read from the request's headers,
     as the SDK's own `Context.headers` reads them (the SDK has checked the session exists and belongs to
     this token before the request gets here); a 2026-era request (`ctx.protocol_version`) has no session;
  4. with a token, the token's own episode (`token:<owner digest>`), never one shared with another token;
  5. none: the connection's own episode (an in-memory client, a stdio process, or the server's default
     episode for 2026-era HTTP requests with no handle and no token).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from envfarm.servers.runtime.arguments import preview
from envfarm.servers.runtime.control import EPISODE_META_KEY
from envfarm.servers.runtime.episodes import MAX_EPISODE_ID, EpisodeForbidden, EpisodeIdInvalid

SESSION_HEADER = "mcp-session-id"
# The episode a token's requests without a handle use: `token:` and the token's owner digest.
TOKEN_EPISODE_PREFIX = "token:"
# The episode named by the per-episode URL of the request being handled (set by `http.EpisodePaths`).
EPISODE_URL: ContextVar[str | None] = ContextVar("envfarm_episode_url", default=None)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who makes a request (`owner`: the token's owner digest; `principal`: whom the token acts for) and the
    episode it works on (`episode`: its key, None for the connection's own episode)."""

    owner: str | None
    principal: str | None
    episode: str | None


def _checked_id(key: str, where: str) -> str:
    if len(key) > MAX_EPISODE_ID:
        raise EpisodeIdInvalid(
            f"the episode id in {where} is {len(key):,} characters long; the limit is {MAX_EPISODE_ID}"
        )
    return key


def _session(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The 2025-era HTTP session of the request, or None (another transport, or a 2026-era request: it names
    no session, whatever headers it carries)."""
    if ctx.request is None or ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    headers: Mapping[str, str] | None = getattr(ctx.request, "headers", None)
    return headers.get(SESSION_HEADER) if headers is not None else None


def identify(ctx: ServerRequestContext[Any, Any], handle: str | None = None) -> Caller:
    """The caller of the request `ctx`; `handle` is an episode named outside `_meta` (the control plane's
    `episode` parameter). Raises EpisodeIdInvalid for an id over `MAX_EPISODE_ID` characters and
    EpisodeForbidden for another token's own episode."""
    token = get_access_token()
    owner = principal = None
    if token is not None:
        owner, principal = token.client_id, token.subject
    key: str | None = None
    if handle:
        key = _checked_id(handle, "the episode parameter")
    elif (meta := ctx.meta) and (named := meta.get(EPISODE_META_KEY)):
        key = _checked_id(str(named), f'_meta["{EPISODE_META_KEY}"]')
    elif (url := EPISODE_URL.get()) is not None:
        key = _checked_id(url, "the URL")
    elif (session := _session(ctx)) is not None:
        key = f"session:{_checked_id(session, 'the Mcp-Session-Id header')}"
    own = None if owner is None else f"{TOKEN_EPISODE_PREFIX}{owner}"
    if key is None:
        return Caller(owner, principal, own)
    if key.startswith(TOKEN_EPISODE_PREFIX) and key != own:
        raise EpisodeForbidden(f"episode {preview(key)} is another token's own episode")
    return Caller(owner, principal, key)
