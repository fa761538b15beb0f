"""Shared pytest configuration: the hypothesis profiles.

``dev`` (the default) keeps a local run fast; ``ci`` tries many more examples.  Pick one
with the ``HYPOTHESIS_PROFILE`` environment variable, e.g. ``HYPOTHESIS_PROFILE=ci``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# deadline=None: the machine running the suite is shared, and a slow example is not a
# failure of the property under test.
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
