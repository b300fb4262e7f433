"""What tests that run servers as real subprocesses share: a free loopback port, and stopping a
child process (politely first, then for sure)."""

from __future__ import annotations

import socket
import subprocess
from typing import Any


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(process: subprocess.Popen[Any], timeout: float = 10) -> None:
    """SIGTERM ``process``, and SIGKILL it if it has not exited within ``timeout`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
