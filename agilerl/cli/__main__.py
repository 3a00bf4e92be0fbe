"""``python -m agilerl.cli``: the same command line as ``python -m agilerl``."""

import sys

from agilerl.cli import main

sys.exit(main())
