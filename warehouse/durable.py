"""Making a written file, or a rename in a folder, survive a power loss (fsync)."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """A rename is durable once its folder is synced (POSIX; elsewhere the OS sees to it)."""
    if os.name != "posix":
        return
    fsync_file(directory)
