"""The command line, `envfarm` (the top layer: it imports the factory and the driver, nothing imports it). One
module per command group; each command parses its typed options (`options.CommandOptions`), calls one library
function that prints nothing, and prints what came back:

- `farm`: `list`, `serve`, `config`;
- `factory`: `build`, `verify` (`--mutate`), `propose`;
- `imports`: `import openapi|metadata|mcp`;
- `checks`: `bench`, `fuzz`, `soak` (`soak_child` is what each soak seed's child process runs);
- `driver`: `tasks`, `graph`, `rollout`, `eval`, `export`, `run`.

`python -m envfarm.cli` is the console script `envfarm`."""

from envfarm.cli.app import main, parser

__all__ = ["main", "parser"]
