"""Where the public benchmark data lives.

The data is never copied into the project: it is read from the directory named by the
``FEDANON_DATA_DIR`` environment variable, or by default from ``../shared/data`` beside the
repository checkout (where CI and the developers' machines have it).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """The benchmark data directory (may not exist on a machine without the shared data)."""
    configured = os.environ.get("FEDANON_DATA_DIR")
    if configured:
        return Path(configured)
    return REPO_ROOT.parent / "shared" / "data"


def have_data(*parts: str) -> bool:
    """True when the named file or folder under the data directory exists."""
    return data_dir().joinpath(*parts).exists()
