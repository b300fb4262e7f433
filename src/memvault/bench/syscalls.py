"""Counting the syscalls a benchmark's writes make, with ``strace``, in a child process.

A ``fsync`` made by SQLite's C code cannot be counted from Python (wrapping ``os.fsync`` sees
none of them), so the writes run in a child process under ``strace -f``, which logs every
``fsync``/``fdatasync`` (the syncs) and every ``pwrite64`` (SQLite's page writes, to the WAL and,
at a checkpoint, to the database file) of every thread. The child writes :data:`START` and
:data:`END` to its standard error (a ``write(2, ...)`` in the log) around the part to count, so
that opening, warming up and closing are left out. ``strace`` is a Linux tool
(``apt-get install strace``); without it, or where ptrace is not allowed, :func:`count` returns
``None`` and says why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

START = "MEMVAULT_COUNT_START"
END = "MEMVAULT_COUNT_END"
_SYNC = re.compile(r"\b(fsync|fdatasync)\(")
_PWRITE = re.compile(r"\bpwrite64(?:\(| resumed>).*\)\s+=\s+(\d+)\s*$")  # whole, or resumed


@dataclass(frozen=True)
class Counted:
    """What the counted part of a child run did: syncs and bytes written with ``pwrite``."""

    syncs: int
    written_bytes: int


def mark(text: str) -> None:
    """Write a marker (:data:`START` or :data:`END`) to standard error, unbuffered, from the
    child."""
    os.write(2, (text + "\n").encode())


def available() -> str | None:
    """``None`` when :func:`count` can run here, else why not."""
    if not sys.platform.startswith("linux"):
        return f"strace counts syscalls on Linux only (this is {sys.platform})"
    if shutil.which("strace") is None:
        return "strace is not installed (apt-get install strace)"
    return None


def count(args: list[str], *, timeout: float = 600.0) -> Counted | str:
    """Run ``python args...`` under ``strace -f`` and count the syncs and ``pwrite`` bytes
    between the child's markers; a string says why it could not (no strace, ptrace refused,
    the child failed). The child imports the same memvault as this process."""
    reason = available()
    if reason is not None:
        return reason
    import memvault

    env = dict(os.environ)
    source = str(Path(memvault.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory(prefix="memvault-strace-") as folder:
        log = Path(folder) / "strace.log"
        done = subprocess.run(
            ["strace", "-f", "-qq", "-o", str(log), "-e", "trace=fsync,fdatasync,pwrite64,write",
             sys.executable, *args],
            env=env, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return f"the counted run failed (exit {done.returncode}): {tail}"
        return _parse(log.read_text(errors="replace"))


def _parse(text: str) -> Counted | str:
    inside, seen, syncs, written = False, 0, 0, 0
    for line in text.splitlines():
        if START in line:
            inside, seen = True, seen + 1
        elif END in line:
            inside = False
        elif inside:
            if _SYNC.search(line):
                syncs += 1
            elif (found := _PWRITE.search(line)) is not None:
                written += int(found.group(1))
    if not seen:
        return "the strace log holds no start marker"
    return Counted(syncs, written)
