"""``memvault demo`` runs offline as a real subprocess and prints what the model is fed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_demo_command_prints_the_model_input(tmp_path: Path) -> None:
    db = tmp_path / "nested" / "demo.db"
    result = subprocess.run(
        [sys.executable, "-m", "memvault", "demo", "--db", f"sqlite:///{db}"],
        capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "update_working_memory" in out
    assert "what the model was fed in the new thread" in out
    assert "- Name: Ada" in out and "Kyoto" in out and "recall found: first-visit#" in out
    assert db.exists()
