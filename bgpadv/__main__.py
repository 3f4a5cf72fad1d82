"""`python -m bgpadv` is the `bgpadv` command."""

import sys

from bgpadv.commands.cli import main

sys.exit(main())
