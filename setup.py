"""Build configuration that pyproject.toml cannot state: one import namespace over the repository's layout.

The repository keeps the farm's layout (`clients/`, `factory/`, `servers/` and `registry.json` at the top,
`envfarm/` beside them), and the distribution exposes all of it under `envfarm` only: `envfarm.clients`
is the folder `clients/`, `envfarm.factory` is `factory/`, `envfarm.servers` is `servers/` (as a src
layout would, by mapping, not by moving folders). A wheel holds `envfarm/` alone at the top of
site-packages; an editable install (`pip install -e .`) maps the same names onto the checkout (setuptools
installs a finder for the three mapped folders), so new files, a freshly generated server included, are
importable at once.

The wheel also carries registry.json inside the `servers` folder: it lives at the repository root,
beside `servers/`, and a wheel cannot put a file at the top of site-packages, so building one copies it
to `envfarm/servers/registry.json`, where the installed farm reads it
(`envfarm.servers.runtime.registry.registry_file`).
"""

from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

NAMESPACE = "envfarm"
MAPPED = ("clients", "factory", "servers")  # folders at the top of the repository, packages under NAMESPACE
REGISTRY = "registry.json"


def packages() -> list[str]:
    """Every package and folder of package data, named as installed (`clients/scoring` ->
    `envfarm.clients.scoring`); folders without `__init__.py` (spec folders) are namespace packages."""
    found = find_namespace_packages(include=[NAMESPACE, f"{NAMESPACE}.*"], exclude=["*.__pycache__"])
    for folder in MAPPED:
        found += [f"{NAMESPACE}.{name}" for name in find_namespace_packages(include=[folder, f"{folder}.*"])]
    return [name for name in found if "__pycache__" not in name.split(".")]


class BuildPyWithRegistry(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the checkout's registry.json in place
            return
        if not Path(REGISTRY).is_file():
            raise FileNotFoundError(f"{Path(REGISTRY).resolve()}: the farm's registry is missing from the source tree")
        self.copy_file(REGISTRY, str(Path(self.build_lib, NAMESPACE, "servers", REGISTRY)))


setup(
    packages=packages(),
    package_dir={NAMESPACE: NAMESPACE, **{f"{NAMESPACE}.{folder}": folder for folder in MAPPED}},
    cmdclass={"build_py": BuildPyWithRegistry},
)
