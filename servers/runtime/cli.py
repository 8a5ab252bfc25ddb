"""Command line of one generated server: `python -m envfarm.servers.<name> [--http] [--port P] [--db FILE]`;
the runtime's own entry point for a server of any farm folder, `python -m envfarm.servers.runtime --farm FOLDER
NAME [...]` (what the factory's sandbox, coverage gate and warm launcher run: nothing above the runtime);
and the serving options `envfarm serve` shares with both (episode budget, bearer tokens, allowed hosts)."""

from __future__ import annotations

import argparse
import faulthandler
import gc
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # this module imports only the standard library: `main` starts before the SDK is imported
    from mcp.server.mcpserver import MCPServer

    from envfarm.servers.runtime.episodes import EpisodeBudget

DEFAULT_PORT = 8000
# Comma-separated Host names for a non-loopback bind, when --allow-host is not given (a container's CMD
# cannot know the name its clients will use; `docker run -e` can say it).
ALLOW_HOST_ENV = "ENVFARM_ALLOW_HOST"


class ServerBuilder(Protocol):
    """The `build` every generated `server.py` defines."""

    def __call__(
        self, *, db_file: Path | None = None, max_episodes: int = ..., budget: EpisodeBudget | None = ...
    ) -> MCPServer: ...


def add_serving_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of every way to serve: transport, bind, persistence, episode lifetime, access."""
    from envfarm.servers.runtime.access import TOKEN_ENV
    from envfarm.servers.runtime.episodes import DEFAULT_EPISODE_TTL_S, default_budget_mb

    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, help=f"HTTP port, with --http (default: {DEFAULT_PORT})")
    parser.add_argument("--db", type=Path, help="persistent mode: keep state in this SQLite file (WAL)")
    parser.add_argument(
        "--max-episode-mb",
        type=float,
        default=None,
        help=f"memory all named episodes of this process may hold; least recently used ones are closed "
        f"beyond it (default here: {default_budget_mb()} MB, an eighth of the machine's memory)",
    )
    parser.add_argument(
        "--episode-ttl",
        type=float,
        default=DEFAULT_EPISODE_TTL_S,
        help=(
            f"seconds a named episode may stay idle before it is closed; 0: never (default: {DEFAULT_EPISODE_TTL_S:g})"
        ),
    )
    parser.add_argument(
        "--token",
        action="append",
        default=None,
        metavar="TOKEN[=PRINCIPAL]",
        help=f"with --http: require this bearer token (repeatable; default: ${TOKEN_ENV}, comma-separated); "
        "an episode then belongs to the token that opened it. TOKEN=PRINCIPAL binds the token to a principal: "
        "its calls act for them on every server that knows them (e.g. tok=maria.patel@example.com)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help=f"with a non-loopback --host: a Host name clients use (repeatable; default: ${ALLOW_HOST_ENV}, "
        "comma-separated; DNS-rebinding checks stay on)",
    )


class ServingOptions:
    """What the serving arguments mean, checked: the problem to print, or the budget and access to serve with."""

    def __init__(self, args: argparse.Namespace) -> None:
        from envfarm.servers.runtime.access import TOKEN_ENV, Access, parse_tokens
        from envfarm.servers.runtime.episodes import EpisodeBudget

        tokens, bound = parse_tokens(args.token or os.environ.get(TOKEN_ENV, "").split(","))
        hosts = args.allow_host or [h.strip() for h in os.environ.get(ALLOW_HOST_ENV, "").split(",") if h.strip()]
        self.access = Access(tokens=tokens, allowed_hosts=tuple(hosts), principals=bound)
        self.budget = EpisodeBudget(args.max_episode_mb, args.episode_ttl or None)
        self.port = args.port or DEFAULT_PORT
        self.problem: str | None = None
        if args.port is not None and not args.http and not getattr(args, "all", False):
            self.problem = "--port needs --http (without it the server speaks stdio)"
        elif (args.http or getattr(args, "all", False)) and (reason := self.access.problem(args.host)):
            self.problem = reason
        elif args.max_episode_mb is not None and args.max_episode_mb <= 0:
            self.problem = "--max-episode-mb must be positive"


def add_source_argument(parser: argparse.ArgumentParser) -> None:
    """`--source`: pick the deep farm (builtin), the broad farm (imported) or both out of one registry, by
    registry.json's `source` (`RegistryEntry.source_kind`)."""
    from envfarm.servers.runtime.registry import SOURCE_KINDS  # not on a single server's path to its first answer

    parser.add_argument(
        "--source",
        nargs="+",
        choices=SOURCE_KINDS,
        metavar="SOURCE",
        help="only servers of these sources: builtin (the hand-written deep farm), imported (from API "
        "documents), generated (proposed or other); default: all",
    )


def enable_crash_stacks() -> None:
    """A native crash (SIGSEGV, SIGABRT, SIGBUS, ...) in a serving process prints every thread's Python
    stack on stderr before the process dies, instead of a silent exit. Microseconds at startup."""
    if not faulthandler.is_enabled():
        faulthandler.enable(all_threads=True)


@contextmanager
def start_up() -> Iterator[None]:
    """No cyclic garbage collection while a server process starts. Importing the SDK and a server allocates
    ~130k objects that all live as long as the process, and the collector ran over them again and again:
    60-90 ms of CPU, about a tenth of a cold start to the first `tools/list`. At the end the start-up's objects
    are frozen (`gc.freeze`: kept out of every later collection, as the workers of `--workers` do after their
    fork) and collection resumes, before the first request is read."""
    if not gc.isenabled():  # someone else decided (a warm launcher's child, a test): leave it so
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def main(name: str, argv: Sequence[str] | None = None) -> None:
    """`python -m envfarm.servers.<name>`: its generated `__main__.py` calls this before anything has imported the
    SDK, which is then imported (with the server's own modules) inside `start_up`."""
    enable_crash_stacks()
    with start_up():
        parser = argparse.ArgumentParser(
            prog=f"python -m envfarm.servers.{name}", description=f"Run the {name} MCP server."
        )
        add_serving_arguments(parser)
        args = parser.parse_args(argv)
        build: ServerBuilder = importlib.import_module(f"envfarm.servers.{name}.server").build
        serve = _prepare(parser, args, name, build)
    serve()


def farm_main(argv: Sequence[str] | None = None) -> int:
    """`python -m envfarm.servers.runtime --farm FOLDER NAME [serving options]`: serve the server `NAME` of the farm
    at FOLDER, imported from there (`envfarm.servers.runtime.farm`: handlers sandboxed unless the farm's registry
    marks the server reviewed)."""
    enable_crash_stacks()
    with start_up():
        parser = argparse.ArgumentParser(
            prog="python -m envfarm.servers.runtime", description="Run one server of a farm folder."
        )
        parser.add_argument("--farm", type=Path, required=True, help="farm root holding servers/ and registry.json")
        parser.add_argument("name", help="server name")
        add_serving_arguments(parser)
        args = parser.parse_args(argv)
        from envfarm.servers.runtime.farm import import_server

        try:
            module = import_server(args.farm.resolve(), args.name)
        except (LookupError, ValueError) as exc:
            parser.exit(2, f"error: {exc}\n")
        serve = _prepare(parser, args, args.name, module.build)
    serve()
    return 0


def _prepare(
    parser: argparse.ArgumentParser, args: argparse.Namespace, name: str, build: ServerBuilder
) -> Callable[[], None]:
    """Build the server `args` ask for; what serves it until stdin closes (stdio) or the process is stopped."""
    options = ServingOptions(args)
    if options.problem:
        parser.error(options.problem)
    try:
        server = build(db_file=args.db, budget=options.budget)
    except ValueError as exc:
        parser.error(str(exc))
    if args.http:
        from envfarm.servers.runtime.http import serve_http  # uvicorn and starlette: only for HTTP

        url = f"http://{args.host}:{options.port}/{name}/mcp"
        return lambda: serve_http(
            {name: server},
            host=args.host,
            port=options.port,
            budget=options.budget,
            access=options.access,
            on_ready=lambda: print(f"{name}: serving streamable HTTP at {url}", file=sys.stderr, flush=True),
        )
    from envfarm.servers.runtime.stdio import run_stdio

    return lambda: run_stdio(server)
