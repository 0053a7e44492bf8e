"""The bundle's entry point: ``deploylens`` as installed (CLI, or the GUI with no command), or —
started with ``--deploylens-worker`` by the app itself — the bundle's own worker process."""

from __future__ import annotations

import sys


def main() -> int:
    from deploylens.core.frozen import WORKER_FLAG

    if len(sys.argv) > 1 and sys.argv[1] == WORKER_FLAG:
        del sys.argv[1]
        from deploylens.core.worker.runtime import main as worker

        return worker()
    from deploylens.core.cli import main as cli

    return cli()


if __name__ == "__main__":
    sys.exit(main())
