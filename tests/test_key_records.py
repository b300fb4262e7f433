"""Key records are not users' data: deleting a resource deletes its keys (and only its keys);
export and copy leave the key records out unless asked (``include_keys``, ``--include-keys``);
``memvault purge`` runs the store's purge step."""

from __future__ import annotations

import io
import json
from pathlib import Path

from typer.testing import CliRunner

from memvault import Memory
from memvault.cli.app import app
from memvault.server import Keyring
from memvault.transfer.copier import copy_store
from memvault.transfer.reserved import KEYS_RESOURCE


async def seeded(url: str) -> None:
    async with await Memory.open(url) as memory:
        keyring = Keyring(memory)
        await keyring.create(resource_id="ann")
        await keyring.create(resource_id="ann", name="second")
        await keyring.create(resource_id="bob")
        await keyring.create(resource_id=None, name="admin")
        await memory.create_thread(resource_id="ann", thread_id="t")
        await memory.set_state({"resource_id": "ann"}, resource_id="bob", key="lookalike")


async def test_deleting_a_resource_deletes_its_keys_and_no_other(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.db'}"
    await seeded(url)
    async with await Memory.open(url) as memory:
        deleted = await memory.delete_resource(resource_id="ann")
        assert deleted.extra == {"api_keys": 2} and deleted.threads == 1
        left = await Keyring(memory).list()
        assert sorted(str(k.resource_id) for k in left) == ["None", "bob"]
        assert await memory.get_state(resource_id="bob", key="lookalike") is not None
        assert (await memory.delete_resource(resource_id="bob")).extra == {"api_keys": 1}


async def test_export_and_copy_leave_the_keys_out_unless_asked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.db'}"
    await seeded(url)
    async with await Memory.open(url) as memory:
        plain, with_keys = io.StringIO(), io.StringIO()
        await memory.export_records(plain)
        await memory.export_records(with_keys, include_keys=True)
    resources = {json.loads(line).get("resource_id") for line in plain.getvalue().splitlines()}
    assert KEYS_RESOURCE not in resources and "bob" in resources
    assert KEYS_RESOURCE in {json.loads(line).get("resource_id")
                             for line in with_keys.getvalue().splitlines()}
    for include, expected in ((False, 0), (True, 4)):
        async with await Memory.open(url) as src, \
                await Memory.open(f"sqlite:///{tmp_path / f'c{include}.db'}") as dst:
            report = await copy_store(src, dst, include_keys=include)
            assert report.ok, report.mismatches
            assert len(await Keyring(dst).list()) == expected


def test_the_cli_export_copy_and_purge(tmp_path: Path) -> None:
    import asyncio

    url = f"sqlite:///{tmp_path / 'k.db'}"
    asyncio.run(seeded(url))
    runner = CliRunner()
    out = runner.invoke(app, ["export", "--all", "--db", url])
    assert out.exit_code == 0, out.output
    assert KEYS_RESOURCE not in out.stdout
    out = runner.invoke(app, ["export", "--all", "--include-keys", "--db", url])
    assert KEYS_RESOURCE in out.stdout
    target = f"sqlite:///{tmp_path / 'c.db'}"
    out = runner.invoke(app, ["copy", "--from", url, "--to", target, "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["ok"], out.output
    out = runner.invoke(app, ["purge", "--db", url, "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == {"purged": {"vacuumed": True, "wal_truncated": True}}
