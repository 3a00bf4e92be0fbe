"""``python -m agilerl``: the command line (what launchers run: ``accelerate launch -m
agilerl train MANIFEST``, ``torchrun -m agilerl train MANIFEST``)."""

import sys

from agilerl.cli import main

sys.exit(main())
