"""Where the shared fixture tables live: ``../shared/fixtures`` next to the checkout.

``TXSQL_FIXTURES`` overrides it; otherwise the nearest ancestor of this checkout holding
``shared/fixtures`` wins (CI may clone the repo elsewhere), then ``/work/shared/fixtures``.
"""

from __future__ import annotations

import os
from pathlib import Path


def find_fixtures() -> Path:
    override = os.environ.get("TXSQL_FIXTURES")
    if override:
        return Path(override)
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "fixtures"
        if candidate.is_dir():
            return candidate
    return Path("/work/shared/fixtures")


FIXTURES = find_fixtures()
