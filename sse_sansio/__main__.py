"""``python -m sse_sansio``: see ``sse_sansio._cli._main``."""

import sys

from ._cli._main import main

sys.exit(main())
