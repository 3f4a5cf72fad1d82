"""`python -m bgpadv` is the `bgpadv` command."""

import sys

from bgpadv.cli import main

sys.exit(main())
