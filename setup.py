"""Build hook: the wheel carries registry.json inside the `servers` package.

registry.json lives at the repository root, beside `servers/` (the farm's layout). A wheel cannot put a
file at the top of site-packages, so building one copies it to `servers/registry.json`, where the
installed farm reads it (`servers.runtime.registry.registry_file`). Everything else is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

REGISTRY = "registry.json"


class BuildPyWithRegistry(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the checkout's registry.json in place
            return
        if not Path(REGISTRY).is_file():
            raise FileNotFoundError(f"{Path(REGISTRY).resolve()}: the farm's registry is missing from the source tree")
        self.copy_file(REGISTRY, str(Path(self.build_lib, "servers", REGISTRY)))


setup(cmdclass={"build_py": BuildPyWithRegistry})
