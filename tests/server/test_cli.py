"""``memvault keys create|list|revoke``, ``memvault serve`` and ``memvault studio`` as real
subprocesses."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx
import pytest

ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def memvault(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memvault", *args], capture_output=True, text=True,
                          timeout=120, env=ENV)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'x.db'}"


@contextmanager
def running(*args: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen([sys.executable, "-m", "memvault", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        yield process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def first_url(stream: IO[str] | None) -> str:
    assert stream is not None
    for line in stream:
        if found := re.search(r"http://127\.0\.0\.1:\d+\S*", line):
            return found.group(0)
    raise AssertionError("no URL printed")


def test_keys_create_list_revoke(db: str) -> None:
    created = memvault("keys", "create", "--resource", "ada", "--name", "agent", "--db", db, "--json")
    assert created.returncode == 0, created.stderr
    key = json.loads(created.stdout)
    assert key["key"].startswith("mv_") and key["resource_id"] == "ada" and key["admin"] is False
    admin = memvault("keys", "create", "--admin", "--db", db)
    assert admin.returncode == 0 and admin.stdout.strip().startswith("mv_")

    listed = json.loads(memvault("keys", "list", "--db", db, "--json").stdout)["keys"]
    assert [(k["resource_id"], k["admin"], k["name"]) for k in listed] in (
        [("ada", False, "agent"), (None, True, None)], [(None, True, None), ("ada", False, "agent")])
    assert "key" not in listed[0] and "sha256" not in json.dumps(listed)
    assert key["key_id"] in memvault("keys", "list", "--db", db).stdout

    assert memvault("keys", "revoke", key["key_id"], "--db", db).returncode == 0
    assert len(json.loads(memvault("keys", "list", "--db", db, "--json").stdout)["keys"]) == 1
    again = memvault("keys", "revoke", key["key_id"], "--db", db)
    assert again.returncode == 1 and "no key" in again.stderr


@pytest.mark.parametrize("args", [[], ["--admin", "--resource", "ada"], ["--resource", "memvault:api-keys"]])
def test_keys_create_needs_one_owner(db: str, args: list[str]) -> None:
    done = memvault("keys", "create", *args, "--db", db)
    assert done.returncode != 0 and "memvault:" in done.stderr


def test_serve_answers_with_a_created_key(db: str) -> None:
    key = memvault("keys", "create", "--resource", "ada", "--db", db).stdout.strip()
    with running("serve", "--db", db, "--port", "0") as server:
        base = first_url(server.stderr).removesuffix("/v1")
        me = httpx.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert me.status_code == 200 and me.json()["resource_id"] == "ada"
        assert httpx.get(f"{base}/v1/me", timeout=30).status_code == 401
    assert server.returncode is not None


def test_studio_prints_a_url_with_an_ephemeral_admin_key(db: str) -> None:
    with running("studio", "--db", db, "--port", "0", "--no-open") as studio:
        url = first_url(studio.stdout)
        base, key = url.split("/studio/#key=")
        me = httpx.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert me.json()["admin"] is True
    assert json.loads(memvault("keys", "list", "--db", db, "--json").stdout) == {"keys": []}


def test_stats_leave_the_key_records_out_unless_asked(db: str) -> None:
    assert memvault("keys", "create", "--resource", "ada", "--db", db).returncode == 0
    every = json.loads(memvault("stats", "--db", db, "--json").stdout)
    assert every["resources"] == {} and every["totals"]["resources"] == 0
    named = json.loads(memvault("stats", "--resource", "memvault:api-keys", "--db", db, "--json").stdout)
    assert named["resources"]["memvault:api-keys"]["states"] == 1


@pytest.mark.parametrize("command", [["keys", "list"], ["serve"], ["studio", "--no-open"]])
def test_without_the_server_extra_the_commands_say_what_to_install(command: list[str], db: str) -> None:
    """fastapi hidden from the import system, as in an install without the ``server`` extra."""
    script = ("import sys; sys.modules['fastapi'] = None; from memvault.cli.app import main; "
              f"sys.argv = ['memvault', *{[*command, '--db', db]!r}]; main()")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=ENV)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "pip install 'memvault[server]'" in done.stderr
