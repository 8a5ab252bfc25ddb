"""`python -X faulthandler -m envfarm.cli.soak_child SEED N STEPS WORKDIR [FARM]`: one seed of `envfarm soak`,
each step this command line's `main` in this interpreter (`envfarm.soak.run_child`). It lives here, not in
`envfarm.soak`, so that the soak never imports the command line that runs it."""

from __future__ import annotations

import sys

from envfarm.cli.app import main
from envfarm.soak import run_child

if __name__ == "__main__":
    sys.exit(run_child(sys.argv[1:], main))
