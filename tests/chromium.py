"""Where the browser tests' Chromium is: the lookup `make test` runs (.ci/find-chromium)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

FIND_CHROMIUM = Path(__file__).resolve().parent.parent / ".ci" / "find-chromium"


@functools.cache
def find_chromium() -> tuple[str | None, str]:
    """Chromium's path and ``""``, or ``None`` and what to do (the script's own words).
    Never installs: `make test` has run the script, installing where it could, before this."""
    found = subprocess.run(
        [FIND_CHROMIUM, "--no-install"], capture_output=True, text=True, check=False
    )
    if found.returncode == 0 and found.stdout.strip():
        return found.stdout.strip(), ""
    return None, found.stderr.strip() or f"{FIND_CHROMIUM} found no chromium"
