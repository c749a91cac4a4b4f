"""The `switchgnn` command: ``switchgnn launch ...`` (see switchgnn.launch)."""

from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatches the subcommand; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: switchgnn launch [options] -- COMMAND ...\n\n"
              "  launch   plan a graph, start the switch and one daemon per worker, and run\n"
              "           COMMAND per worker under torch.distributed (switchgnn launch --help)")
        return 0 if args else 2
    if args[0] == "launch":
        from .launch import main as launch
        return launch(args[1:])
    print(f"switchgnn: unknown command {args[0]!r} (try: switchgnn launch --help)",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
