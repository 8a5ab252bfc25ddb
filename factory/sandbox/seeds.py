"""`python -m envfarm.factory.sandbox.seeds SEED_FILE SEED_NUMBER NOW`: a spec folder's `seed.py` run inside the
sandbox, its rows written to stdout as JSON.

`seed.py` is code from a spec folder, as untrusted as `handlers.py`: building a folder must not run it
in the factory's own process. Here it runs under the same resource limits and audit hook as every
verified server (no network, no processes, no writes, reads only inside the interpreter, envfarm and
its own folder), and only JSON comes back (seed rows are JSON values: strings, numbers, booleans, null).
"""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    seed_file, number, now = (list(sys.argv[1:] if argv is None else argv) + ["", "0", ""])[:3]
    from envfarm.factory.sandbox.guard import enter

    enter(["--farm", str(Path(seed_file).resolve().parent)], server=False)
    try:
        module_spec = importlib.util.spec_from_file_location("_envfarm_seed", seed_file)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        rows = module.build(random.Random(int(number)), datetime.fromisoformat(now))
        text = json.dumps(rows, allow_nan=False)
    except Exception as exc:  # noqa: BLE001 - every failure of untrusted code is reported, never raised
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
