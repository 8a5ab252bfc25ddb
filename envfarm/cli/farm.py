"""The farm as it is: `envfarm list`, `envfarm serve`, `envfarm config`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from envfarm.cli.options import CommandOptions, fail
from envfarm.servers.runtime.cli import ServingOptions, add_serving_arguments, add_source_argument
from envfarm.servers.runtime.farm import stdio_args
from envfarm.servers.runtime.registry import Registry, registry_file

CLIENTS = ("claude", "cursor", "vscode")


class ListOptions(CommandOptions):
    markdown: bool = False
    update: Path | None = None


class ServeOptions(CommandOptions):
    name: str | None = None
    all: bool = False
    source: list[str] | None = None
    http: bool = False
    host: str = "127.0.0.1"
    db: Path | None = None


class ConfigOptions(CommandOptions):
    names: list[str] = Field(default_factory=list)
    client: Literal["claude", "cursor", "vscode"] = "claude"


def cmd_list(args: argparse.Namespace) -> int:
    options = ListOptions.parse(args)
    registry = options.registry()
    if options.update:
        from envfarm.farm_table import update_readme

        changed = update_readme(options.update, registry)
        print(f"{options.update}: {'updated' if changed else 'already up to date'}")
        return 0
    if options.markdown:
        from envfarm.farm_table import render_farm_table

        print(render_farm_table(registry))
        return 0
    if not registry.servers:
        print(f"no servers in {registry_file(options.farm_root())}; build some with `envfarm build`")
        return 0
    header = f"{'server':<22} {'domain':<16} {'tools':>5} {'writes':>6} {'rows':>6}  {'verified':<10} tags"
    print(header)
    print("-" * len(header))
    for s in registry.servers:
        print(
            f"{s.name:<22} {s.domain:<16} {s.tool_count:>5} {s.write_tool_count:>6} {s.seed_rows:>6}  "
            f"{s.verification:<10} {','.join(s.tags)}"
        )
    domains = {s.domain for s in registry.servers}
    tools = sum(s.tool_count for s in registry.servers)
    print(f"\n{len(registry.servers)} servers, {len(domains)} domains, {tools} tools")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from envfarm.servers.runtime.cli import enable_crash_stacks

    enable_crash_stacks()
    from envfarm.servers.runtime.farm import load_server, load_servers
    from envfarm.servers.runtime.http import serve_http

    options = ServeOptions.parse(args)
    serving = ServingOptions(args)  # the runtime's own reading of the serving arguments
    problem = serving.problem
    if options.all and options.db:
        problem = "--db keeps one server's state; it cannot be combined with --all"
    elif not options.all and not options.name:
        problem = "name a server or pass --all"
    if problem:
        return fail(problem)
    registry = options.registry()
    if options.all:
        try:
            names = registry.select(None, options.source) or registry.names()
        except LookupError as exc:
            return fail(str(exc))
        if not names:
            return fail("the registry lists no servers")
        url = f"http://{options.host}:{serving.port}/<name>/mcp"
        serve_http(
            load_servers(options.farm_root(), names, budget=serving.budget),
            host=options.host,
            port=serving.port,
            budget=serving.budget,
            access=serving.access,
            on_ready=lambda: print(f"serving {len(names)} servers at {url}", file=sys.stderr, flush=True),
        )
        return 0
    name = options.name or ""
    db: dict[str, Any] = {"db_file": options.db} if options.db else {}  # the server's own default otherwise
    try:
        server = load_server(options.farm_root(), name, budget=serving.budget, **db)
    except (LookupError, ValueError) as exc:
        return fail(str(exc))
    if options.http:
        url = f"http://{options.host}:{serving.port}/{name}/mcp"
        serve_http(
            {name: server},
            host=options.host,
            port=serving.port,
            budget=serving.budget,
            access=serving.access,
            on_ready=lambda: print(f"serving {name} at {url}", file=sys.stderr, flush=True),
        )
    else:
        from envfarm.servers.runtime.stdio import run_stdio

        run_stdio(server)
    return 0


def client_config(registry: Registry, farm_root: Path, client: str, names: Sequence[str]) -> dict:
    """The mcpServers block `client` expects, launching each server over stdio from this farm (no PYTHONPATH)."""
    chosen = [s for s in registry.servers if not names or s.name in names]
    missing = sorted(set(names) - {s.name for s in chosen})
    if missing:
        raise LookupError(f"not in the registry: {', '.join(missing)}")
    entries = {}
    for s in chosen:
        entry = {"command": sys.executable, "args": stdio_args(farm_root, s.name)}
        entries[s.name] = {"type": "stdio", **entry} if client == "vscode" else entry
    return {"servers": entries} if client == "vscode" else {"mcpServers": entries}


def cmd_config(args: argparse.Namespace) -> int:
    options = ConfigOptions.parse(args)
    try:
        config = client_config(options.registry(), options.farm_root(), options.client, options.names)
    except LookupError as exc:
        return fail(str(exc))
    print(json.dumps(config, indent=2))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """`list`, `serve`, `config`."""
    ls = sub.add_parser("list", help="the published servers, from registry.json")
    ls.add_argument("--markdown", action="store_true", help="print the README's farm table")
    ls.add_argument("--update", type=Path, metavar="README", help="rewrite the farm table inside this file")
    ls.set_defaults(func=cmd_list)

    s = sub.add_parser("serve", help="run one server (stdio or HTTP) or the whole farm on one HTTP port")
    s.add_argument("name", nargs="?", help="server name")
    s.add_argument("--all", action="store_true", help="serve every registered server at /<name>/mcp (HTTP)")
    add_source_argument(s)
    add_serving_arguments(s)
    s.set_defaults(func=cmd_serve)

    c = sub.add_parser("config", help="print the mcpServers JSON a desktop client expects")
    c.add_argument("names", nargs="*", help="servers to include (default: all)")
    c.add_argument("--client", choices=CLIENTS, default="claude")
    c.set_defaults(func=cmd_config)
