"""`python -m envfarm.servers.runtime --farm FOLDER NAME [...]`: serve one server of a farm folder (see
`cli.farm_main`)."""

import sys

from envfarm.servers.runtime.cli import farm_main

if __name__ == "__main__":
    sys.exit(farm_main())
