from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_core_imports_without_django() -> None:
    """buffers.healing is plain Python: importing it loads no Django module."""
    check = (
        "import sys, buffers.healing; "
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"buffers.healing imported Django modules: {done.stdout}"
