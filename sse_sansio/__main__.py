"""``python -m sse_sansio``: see ``sse_sansio._cli``."""

import sys

from ._cli import main

sys.exit(main())
