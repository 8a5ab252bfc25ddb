"""`python -m envfarm.cli ...`: the console script `envfarm` (what client configs and `serve --all` hosts run)."""

import sys

from envfarm.cli.app import main

sys.exit(main())
