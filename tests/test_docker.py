"""The Docker image starts and serves every tool: its CMD and ENV, run here exactly as the container
would run them (no Docker needed), and, where a Docker engine answers, the image itself."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from conftest import REPO

from envfarm.clients.connect import free_port, http_client, shared_http_client
from envfarm.servers.runtime.access import TOKEN_ENV
from envfarm.servers.runtime.registry import load_registry

DOCKERFILE = REPO / "Dockerfile"
CONTAINER_PORT = "8000"


def dockerfile() -> tuple[list[str], dict[str, str], str]:
    """(CMD as a list, ENV as a dict, the EXPOSEd port) of the Dockerfile; CMD must be the exec form."""
    cmd: list[str] | None = None
    env: dict[str, str] = {}
    exposed = ""
    for line in DOCKERFILE.read_text().splitlines():
        keyword, _, rest = line.strip().partition(" ")
        if keyword == "CMD":
            cmd = json.loads(rest)
        elif keyword == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                env[key] = value
        elif keyword == "EXPOSE":
            exposed = rest.strip()
    assert cmd is not None, "the Dockerfile has no CMD"
    return cmd, env, exposed


def local_command(cmd: list[str], port: int) -> list[str]:
    """The CMD as it runs in the container, with this environment's `envfarm` and a free port (the
    container's 8000 may be taken here); nothing else changes."""
    assert cmd[0] == "envfarm" and cmd[cmd.index("--port") + 1] == CONTAINER_PORT, cmd
    script = Path(sys.executable).with_name("envfarm")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "envfarm.cli"]
    rest = cmd[1:]
    rest[rest.index("--port") + 1] = str(port)
    return head + rest


def status_of(url: str, token: str | None = None) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@contextmanager
def serving(command: list[str], env: Mapping[str, str], base_url: str) -> Iterator[subprocess.Popen[bytes]]:
    """Run the command until the block ends; ready once the farm index answers (401 without a token)."""
    process = subprocess.Popen(command, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd="/")
    try:
        deadline = time.monotonic() + 300
        while True:
            if process.poll() is not None:
                output = process.stdout.read().decode() if process.stdout else ""
                raise AssertionError(f"{shlex.join(command)} exited with {process.returncode}:\n{output}")
            assert time.monotonic() < deadline, "the farm did not answer within 300 s"
            try:
                status_of(f"{base_url}/")
                break
            except OSError:
                time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def list_every_tool(base_url: str, token: str) -> dict[str, int]:
    """tools/list on every server the farm index names, with the bearer token: tools per server."""
    counts = {}
    async with shared_http_client(token=token) as http:
        paths = (await http.get(f"{base_url}/")).json()["servers"]
        for name, path in paths.items():
            async with http_client(f"{base_url}{path}", http) as client:
                counts[name] = len((await client.list_tools()).tools)
    return counts


def expected_tools() -> dict[str, int]:
    return {s.name: s.tool_count for s in load_registry(REPO).servers}


def test_the_dockerfile_command_serves_every_tool_with_the_token_from_the_environment() -> None:
    """The CMD with the image's ENV and ENVFARM_TOKEN, as `docker run -e ENVFARM_TOKEN=...` runs it: it
    binds all interfaces, refuses a request without the token, and lists every tool of every server
    with it, reached as clients of a published port reach it (Host: 127.0.0.1 / localhost)."""
    cmd, image_env, exposed = dockerfile()
    assert exposed == CONTAINER_PORT and "--all" in cmd and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    port = free_port()
    token = secrets.token_urlsafe(24)
    env = {**os.environ, **image_env, TOKEN_ENV: token}
    env.pop("ENVFARM_HOME", None)
    base_url = f"http://127.0.0.1:{port}"
    with serving(local_command(cmd, port), env, base_url):
        assert status_of(f"{base_url}/") == 401
        assert status_of(f"{base_url}/", "not-the-token") == 401
        assert status_of(f"{base_url}/", token) == 200
        assert status_of(f"http://localhost:{port}/", token) == 200
        counts = anyio.run(list_every_tool, base_url, token)
    assert counts == expected_tools()


def test_the_dockerfile_command_refuses_to_start_without_a_token() -> None:
    """No ENVFARM_TOKEN: the container exits at once, saying which variable to set (it never serves
    the farm to the network unauthenticated, and never invents a token that would land in logs)."""
    cmd, image_env, _ = dockerfile()
    env = {k: v for k, v in {**os.environ, **image_env}.items() if k != TOKEN_ENV}
    done = subprocess.run(
        local_command(cmd, free_port()), env=env, check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert TOKEN_ENV in done.stderr and "0.0.0.0" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_allowed_hosts_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from envfarm.cli import parser
    from envfarm.servers.runtime.cli import ALLOW_HOST_ENV, ServingOptions

    monkeypatch.setenv(ALLOW_HOST_ENV, "farm.example.com, localhost ,")
    monkeypatch.setenv(TOKEN_ENV, "tok")
    options = ServingOptions(parser().parse_args(["serve", "--all", "--host", "0.0.0.0"]))
    assert options.problem is None
    assert options.access.allowed_hosts == ("farm.example.com", "localhost") and options.access.tokens == ("tok",)
    flagged = ServingOptions(parser().parse_args(["serve", "--all", "--host", "0.0.0.0", "--allow-host", "a.b"]))
    assert flagged.access.allowed_hosts == ("a.b",)  # the flag wins over the variable
    monkeypatch.delenv(ALLOW_HOST_ENV)
    assert "--allow-host" in (
        ServingOptions(parser().parse_args(["serve", "--all", "--host", "0.0.0.0"])).problem or ""
    )


def docker_engine() -> str | None:
    """Why the image cannot be built here, or None when a Docker engine answers."""
    if shutil.which("docker") is None:
        return "no docker command"
    try:
        info = subprocess.run(["docker", "info"], check=False, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer within 30 s"
    return None if info.returncode == 0 else f"`docker info` failed: {info.stderr.strip().splitlines()[-1:]}"


@pytest.mark.slow
@pytest.mark.skipif(docker_engine() is not None, reason=f"needs a Docker engine ({docker_engine()})")
def test_the_image_builds_starts_and_lists_every_tool() -> None:
    tag = f"envfarm-test:{secrets.token_hex(4)}"
    token = secrets.token_urlsafe(24)
    port = free_port()
    subprocess.run(["docker", "build", "-t", tag, str(REPO)], check=True, timeout=1800)
    try:
        refused = subprocess.run(
            ["docker", "run", "--rm", tag], check=False, capture_output=True, text=True, timeout=300
        )
        assert refused.returncode == 2 and TOKEN_ENV in refused.stderr, refused.stderr
        run = ["docker", "run", "--rm", "-d", "-p", f"127.0.0.1:{port}:{CONTAINER_PORT}", "-e", f"{TOKEN_ENV}={token}"]
        container = subprocess.run([*run, tag], capture_output=True, text=True, check=True).stdout.strip()
        try:
            base_url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 300
            while True:
                try:
                    if status_of(f"{base_url}/") == 401:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, subprocess.run(
                    ["docker", "logs", container], check=False, capture_output=True
                )
                time.sleep(0.5)
            assert anyio.run(list_every_tool, base_url, token) == expected_tools()
        finally:
            subprocess.run(["docker", "rm", "-f", container], check=False, capture_output=True)
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], check=False, capture_output=True)
