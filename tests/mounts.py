"""Small real file systems for fault tests: a tmpfs of a given size (a disk that fills up), which
can be remounted read-only. Mounting needs root with CAP_SYS_ADMIN (these machines' tests run as
root); without it the tests that need one skip, saying why."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


@contextmanager
def tmpfs(folder: Path, size: str = "4m") -> Iterator[Path]:
    """A fresh tmpfs of ``size`` mounted on ``folder`` (created), unmounted afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    done = _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): needs root with CAP_SYS_ADMIN")
    try:
        yield folder
    finally:
        _run("umount", "-l", str(folder))


def remount(folder: Path, mode: str) -> None:
    """Remount the tmpfs at ``folder`` ``ro`` or ``rw``."""
    done = _run("mount", "-o", f"remount,{mode}", str(folder))
    assert done.returncode == 0, done.stderr
