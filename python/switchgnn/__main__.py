"""``python -m switchgnn launch ...``."""

import sys

from .cli import main

sys.exit(main())
