"""Encryption at rest for the SQLite store (SQLCipher, the ``encryption`` extra).

- No plaintext in any file: unique markers (in a message, a thread title, a working-memory note,
  a summary and a state; ASCII, its UTF-16 form, and CJK text) are in no byte of the database
  folder (main file, ``-wal``, ``-shm``), with the store open and after closing it; the same scan
  of an unencrypted store finds them (the control that proves the scan can see them).
- A missing, wrong or unneeded key raises ``EncryptionKeyError`` on open and leaves every file
  of the folder byte-for-byte unchanged; bad keys and ``key_env`` mistakes are
  ``ConfigurationError``; without the package, ``MissingExtraError`` names the extra.
- Search, recall and erasure work on an encrypted file. Erasure is checked by decrypting the
  pages of the main file and the WAL with the raw key (AES-256-CBC, SQLCipher 4's page layout):
  the marker is in the decrypted pages before the deletion and in none after, so
  ``secure_delete``, the FTS5 merge and the WAL truncation work under encryption too.
- ``memvault copy`` from a plain URL to a ``key_env`` URL encrypts an existing store.
- Passphrases with quotes, SQL and any Unicode round-trip (Hypothesis).

The whole conformance suite also runs on an encrypted store (``sqlite-encrypted`` in
``tests/conformance/conftest.py``).
"""

from __future__ import annotations

import asyncio
import os
import struct
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memvault import Memory, Message
from memvault.errors import ConfigurationError, EncryptionKeyError, StoreError
from memvault.stores import open_store, sqlite_options
from memvault.stores.sqlite import SqliteStore
from memvault.transfer.copier import digest

pytest.importorskip("sqlcipher3", reason="the encryption extra: pip install 'memvault[encryption]'")

PASSPHRASE = "correct horse 'battery' \"staple\" ключ 🔑"
RAW_KEY = bytes(range(100, 132))
PAGE, RESERVE = 4096, 80  # SQLCipher 4's defaults: a 16-byte IV and a 64-byte HMAC per page


def files(folder: Path) -> dict[str, bytes]:
    """Every file of the folder, by name, with its bytes."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the folder with its bytes and modification time (ns)."""
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def found(folder: Path, needle: bytes) -> dict[str, int]:
    """How often ``needle`` occurs in each file of the folder (files without it left out)."""
    counts = {name: data.count(needle) for name, data in files(folder).items()}
    return {name: n for name, n in counts.items() if n}


class Markers:
    """Unique words written into every kind of record: ASCII (and its UTF-16 form) and CJK."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:12]
        self.ascii = f"mk{tag}0"
        self.cjk = f"秘密の標識{tag}"

    def needles(self) -> dict[str, bytes]:
        return {"ascii": self.ascii.encode(), "utf-16-le": self.ascii.encode("utf-16-le"),
                "utf-16-be": self.ascii.encode("utf-16-be"), "cjk": self.cjk.encode()}

    async def write(self, memory: Memory) -> None:
        words = f"{self.ascii} {self.cjk}"
        await memory.create_thread(resource_id="ann", thread_id="t", title=f"title {words}")
        await memory.save_messages(
            [Message.user(f"my secret is {words}", id="m1"), Message.assistant("noted", id="m2"),
             Message.user("something else entirely", id="m3")],
            thread_id="t", resource_id="ann")
        await memory.update_working_memory(f"note {words}", resource_id="ann", thread_id="t",
                                           scope="thread", mode="replace")
        await memory.save_summary(f"summary {words}", thread_id="t", resource_id="ann",
                                  through_message_id="m2", expected_version=None)
        await memory.set_state({"value": words}, resource_id="ann", key="run")
        assert await memory.search_messages(resource_id="ann", query=self.ascii)  # indexed too


def encrypted_url(db: Path, monkeypatch: pytest.MonkeyPatch, key: str = PASSPHRASE) -> str:
    monkeypatch.setenv("MEMVAULT_TEST_KEY", key)
    return f"sqlite:///{db}?key_env=MEMVAULT_TEST_KEY"


# --------------------------------------------------------------------------------------------
# No plaintext in any file
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "plain-control"])
async def test_no_file_byte_holds_plaintext(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encrypted: bool
) -> None:
    db = tmp_path / "m.db"
    url = encrypted_url(db, monkeypatch) if encrypted else f"sqlite:///{db}"
    markers = Markers()
    memory = await Memory.open(url)
    try:
        await markers.write(memory)
        assert names(tmp_path) == {"m.db", "m.db-wal", "m.db-shm"}
        open_hits = {kind: found(tmp_path, needle) for kind, needle in markers.needles().items()}
    finally:
        await memory.close()
    closed_hits = {kind: found(tmp_path, needle) for kind, needle in markers.needles().items()}
    if encrypted:
        assert open_hits == closed_hits == {kind: {} for kind in markers.needles()}
        for secret in (PASSPHRASE.encode(), b"SQLite format 3", b"messages_fts", b"CREATE TABLE"):
            assert found(tmp_path, secret) == {}, secret
    else:  # the scan sees SQLite's UTF-8 text, open (WAL) and closed (checkpointed)
        assert open_hits["ascii"] and open_hits["cjk"], open_hits
        assert closed_hits["ascii"].get("m.db", 0) >= 5 and closed_hits["cjk"].get("m.db", 0) >= 5


# --------------------------------------------------------------------------------------------
# Keys: typed errors, nothing written
# --------------------------------------------------------------------------------------------


async def _make(url: str) -> None:
    async with await Memory.open(url) as memory:
        await memory.save_messages([Message.user("hello there")], thread_id="t", resource_id="ann")


@pytest.mark.parametrize("case", ["no key", "wrong passphrase", "wrong raw key", "raw key, passphrase file"])
async def test_an_encrypted_file_without_its_key_is_refused_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], case: str
) -> None:
    db = tmp_path / "m.db"
    await _make(encrypted_url(db, monkeypatch))
    before = snapshot(tmp_path)
    assert set(before) == {"m.db"}
    capfd.readouterr()
    key = {"no key": None, "wrong passphrase": PASSPHRASE + " ", "wrong raw key": RAW_KEY,
           "raw key, passphrase file": PASSPHRASE.encode()[:32]}[case]
    with pytest.raises(EncryptionKeyError) as raised:
        await SqliteStore.open(db, encryption_key=key)
    message = str(raised.value)
    assert str(db) in message
    assert ("is encrypted" in message) if case == "no key" else ("key is wrong" in message)
    assert PASSPHRASE not in message
    assert snapshot(tmp_path) == before
    assert "hmac" not in capfd.readouterr().err  # SQLCipher's own log is kept quiet
    async with await Memory.open(encrypted_url(db, monkeypatch)) as memory:  # the right key works
        saved = await memory.get_messages(thread_id="t", resource_id="ann")
        assert [m.text for m in saved] == ["hello there"]


@pytest.mark.parametrize("key", [PASSPHRASE, RAW_KEY], ids=["passphrase", "raw"])
async def test_a_key_for_a_plain_file_is_refused_untouched(tmp_path: Path, key: str | bytes) -> None:
    db = tmp_path / "m.db"
    await _make(f"sqlite:///{db}")
    before = snapshot(tmp_path)
    with pytest.raises(EncryptionKeyError, match="is not encrypted"):
        await SqliteStore.open(db, encryption_key=key)
    assert snapshot(tmp_path) == before


async def test_a_file_that_is_no_database_is_an_encryption_key_error(tmp_path: Path) -> None:
    """Encrypted bytes and random bytes look alike: without a key, the message says both."""
    db = tmp_path / "m.db"
    await asyncio.to_thread(db.write_bytes, os.urandom(8192))
    before = snapshot(tmp_path)
    with pytest.raises(EncryptionKeyError, match=r"is encrypted, or is not a SQLite database"):
        await open_store(f"sqlite:///{db}")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("key", ["", "with\x00nul", b"short", b"x" * 33, 12345, "\ud800"],
                         ids=["empty", "nul", "short-bytes", "long-bytes", "int", "surrogate"])
async def test_an_unusable_key_is_a_configuration_error_creating_nothing(tmp_path: Path, key: object) -> None:
    with pytest.raises(ConfigurationError):
        await SqliteStore.open(tmp_path / "m.db", encryption_key=key)  # type: ignore[arg-type]
    assert names(tmp_path) == set()


async def test_key_env_mistakes_are_configuration_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMVAULT_TEST_NO_SUCH_KEY", raising=False)
    monkeypatch.setenv("MEMVAULT_TEST_EMPTY_KEY", "")
    for query in ("key_env=MEMVAULT_TEST_NO_SUCH_KEY", "key_env=MEMVAULT_TEST_EMPTY_KEY", "key_env="):
        with pytest.raises(ConfigurationError, match=r"key_env|environment variable"):
            await open_store(f"sqlite:///{tmp_path}/m.db?{query}")
    with pytest.raises(ConfigurationError, match="never holds its encryption key") as raised:
        await open_store(f"sqlite:///{tmp_path}/m.db?key=hunter2secret")
    assert "hunter2secret" not in str(raised.value)  # the refused URL is not echoed
    assert names(tmp_path) == set()


def test_the_key_read_from_the_environment_stays_out_of_reprs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_TEST_KEY", "hunter2secret")
    options = sqlite_options("sqlite:///x.db?key_env=MEMVAULT_TEST_KEY&durability=full")
    assert options.encryption_key == "hunter2secret" and options.durability == "full"
    assert "hunter2secret" not in repr(options)
    assert sqlite_options("sqlite:///x.db").encryption_key is None


def test_without_the_package_a_key_raises_missing_extra(tmp_path: Path) -> None:
    """As if `pip install memvault` alone had run: the import of sqlcipher3 is blocked. A plain
    file still opens, an encrypted one opened without a key is still recognised, and nothing is
    created for a key that cannot be used."""
    encrypted = tmp_path / "enc.db"
    asyncio.run(_make_raw(encrypted))
    probe = f"""
import asyncio, sys
sys.modules["sqlcipher3"] = None
from pathlib import Path
from memvault.errors import EncryptionKeyError, MissingExtraError
from memvault.stores import open_store
from memvault.stores.sqlite import SqliteStore

async def main():
    await (await open_store("sqlite:///{tmp_path}/plain.db")).close()
    try:
        await SqliteStore.open({str(tmp_path / "new.db")!r}, encryption_key="k")
    except MissingExtraError as error:
        print("missing:", error, error.extra)
    print("created:", Path({str(tmp_path / "new.db")!r}).exists())
    try:
        await open_store("sqlite:///{encrypted}")
    except EncryptionKeyError as error:
        print("refused:", error)
    print("loaded:", "sqlcipher3.dbapi2" in sys.modules)

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "pip install 'memvault[encryption]'" in done.stdout and "sqlcipher3-binary" in done.stdout
    assert " encryption\n" in done.stdout  # error.extra
    assert "created: False" in done.stdout
    assert "refused:" in done.stdout and "is encrypted" in done.stdout
    assert "loaded: False" in done.stdout


async def _make_raw(db: Path) -> None:
    store = await SqliteStore.open(db, encryption_key=RAW_KEY)
    async with Memory(store) as memory:
        await memory.save_messages([Message.user("hello there")], thread_id="t", resource_id="ann")


# --------------------------------------------------------------------------------------------
# Search, recall and erasure under encryption (decrypting the pages to look)
# --------------------------------------------------------------------------------------------


def _decrypt_page(key: bytes, pgno: int, data: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    start = 16 if pgno == 1 else 0  # page 1 starts with the file's salt, in the clear
    iv = data[PAGE - RESERVE:PAGE - RESERVE + 16]
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    return decryptor.update(data[start:PAGE - RESERVE]) + decryptor.finalize()


def decrypted_pages(db: Path, key: bytes) -> dict[str, list[bytes]]:
    """Every page of the main file and every frame of the WAL, decrypted with the raw key."""
    main = db.read_bytes()
    pages = {"db": [_decrypt_page(key, n + 1, main[n * PAGE:(n + 1) * PAGE])
                    for n in range(len(main) // PAGE)]}
    wal = Path(f"{db}-wal").read_bytes() if Path(f"{db}-wal").exists() else b""
    frames, offset = [], 32  # the WAL header, then frames: a 24-byte header and a page
    while offset + 24 + PAGE <= len(wal):
        (pgno,) = struct.unpack(">I", wal[offset:offset + 4])
        frames.append(_decrypt_page(key, pgno, wal[offset + 24:offset + 24 + PAGE]))
        offset += 24 + PAGE
    pages["-wal"] = frames
    return pages


def plain_copies(db: Path, key: bytes, marker: str) -> dict[str, int]:
    return {name: sum(page.count(marker.encode()) for page in pages)
            for name, pages in decrypted_pages(db, key).items()}


def note(i: int, word: str) -> Message:
    return Message.user(f"note {i} about {word} and the weather {i * 7}", id=f"m{i}")


async def test_the_decryption_used_by_these_tests_reads_sqlcipher_pages(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    db = tmp_path / "m.db"
    await _make_raw(db)
    first = decrypted_pages(db, RAW_KEY)["db"][0]
    assert struct.unpack(">HBBB", first[:5]) == (PAGE, 2, 2, RESERVE)  # page size, WAL (2, 2), reserve
    assert plain_copies(db, RAW_KEY, "hello there")["db"] >= 1  # in the parts and the indexed body


@pytest.mark.parametrize("deletion", ["delete_messages", "delete_thread", "delete_resource"])
async def test_search_recall_and_erasure_on_an_encrypted_file(tmp_path: Path, deletion: str) -> None:
    pytest.importorskip("cryptography")  # comes with the mcp extra (pyjwt[crypto]); scripts/test installs it
    db = tmp_path / "m.db"
    marker = f"mk{uuid.uuid4().hex}0"
    memory = Memory(await SqliteStore.open(db, encryption_key=RAW_KEY))
    try:
        await memory.create_thread(resource_id="ann", thread_id="doomed", title=f"about {marker}")
        for batch in range(3):
            await memory.save_messages([note(batch * 40 + i, marker) for i in range(40)],
                                       thread_id="doomed", resource_id="ann")
            await memory.save_messages([note(batch * 40 + i, "lighthouses") for i in range(40)],
                                       thread_id="kept", resource_id="bob")
            hits = await memory.search_messages(resource_id="ann", query=marker, limit=200)
            assert len(hits) == 40 * (batch + 1)
        await memory.update_working_memory(f"likes {marker}", resource_id="ann", thread_id="doomed",
                                           scope="thread", mode="replace")
        recalled = await memory.recall(resource_id="ann", query=f"weather {marker}", thread_id="other")
        assert recalled.hits and all(h.thread_id == "doomed" for h in recalled.hits)
        assert found(tmp_path, marker.encode()) == {}
        before = plain_copies(db, RAW_KEY, marker)
        assert before["db"] + before["-wal"] > 100, before  # the decryption sees the text

        if deletion == "delete_messages":
            await memory.delete_messages([f"m{i}" for i in range(120)], thread_id="doomed",
                                         resource_id="ann")
            await memory.delete_thread(thread_id="doomed", resource_id="ann")  # the title and note
        elif deletion == "delete_thread":
            await memory.delete_thread(thread_id="doomed", resource_id="ann")
        else:
            await memory.delete_resource(resource_id="ann")
        assert plain_copies(db, RAW_KEY, marker) == {"db": 0, "-wal": 0}  # the store still open
        assert not await memory.search_messages(resource_id="ann", query=marker)
        assert len(await memory.search_messages(resource_id="bob", query="lighthouses", limit=200)) == 120
        assert await memory.purge() == {"vacuumed": True, "wal_truncated": True}
    finally:
        await memory.close()
    assert plain_copies(db, RAW_KEY, marker) == {"db": 0, "-wal": 0}
    assert found(tmp_path, b"lighthouses") == {}  # what is kept stays encrypted


# --------------------------------------------------------------------------------------------
# memvault copy: how an existing file gets encrypted
# --------------------------------------------------------------------------------------------


async def test_memvault_copy_encrypts_an_existing_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain, target = tmp_path / "plain", tmp_path / "encrypted"
    markers = Markers()
    async with await Memory.open(f"sqlite:///{plain}/m.db") as memory:
        await markers.write(memory)
    url = encrypted_url(target / "m.db", monkeypatch)
    command = [sys.executable, "-m", "memvault", "copy", "--from", f"sqlite:///{plain}/m.db", "--to", url]
    done = await asyncio.to_thread(subprocess.run, [*command, "--json"], capture_output=True, text=True,
                                   timeout=300, check=False, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert PASSPHRASE not in done.stdout + done.stderr
    for needle in markers.needles().values():
        assert found(target, needle) == {}
    async with await Memory.open(f"sqlite:///{plain}/m.db") as source, await Memory.open(url) as copy:
        assert (await digest(source)).mismatches(await digest(copy)) == []
        assert await copy.search_messages(resource_id="ann", query=markers.cjk)
    with pytest.raises(EncryptionKeyError):
        await open_store(f"sqlite:///{target}/m.db")


# --------------------------------------------------------------------------------------------
# Any passphrase round-trips
# --------------------------------------------------------------------------------------------


async def _round_trip(folder: Path, key: str | bytes) -> None:
    db = folder / "m.db"
    store = await SqliteStore.open(db, encryption_key=key)
    async with Memory(store) as memory:
        await memory.save_messages([Message.user("kept under key")], thread_id="t", resource_id="ann")
    store = await SqliteStore.open(db, encryption_key=key)
    async with Memory(store) as memory:
        saved = await memory.get_messages(thread_id="t", resource_id="ann")
        assert [m.text for m in saved] == ["kept under key"]
    wrong = key + "!" if isinstance(key, str) else bytes(b ^ 1 for b in key)
    with pytest.raises(EncryptionKeyError):
        await SqliteStore.open(db, encryption_key=wrong)


@settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(key=st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1,
                   max_size=40))
@example(key="'")
@example(key="''")
@example(key='"')
@example(key="x'00'")
@example(key="'; DROP TABLE messages; --")
@example(key="\\' OR 1=1 --")
@example(key="ключ 鍵 🔑")
@example(key=" ")
def test_any_passphrase_round_trips(key: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_round_trip(Path(folder), key))


@settings(max_examples=10, deadline=None, database=None)
@given(key=st.binary(min_size=32, max_size=32))
@example(key=b"\x00" * 32)
@example(key=b"'" * 32)
def test_any_raw_key_round_trips(key: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_round_trip(Path(folder), key))


# --------------------------------------------------------------------------------------------
# Several processes on one encrypted file
# --------------------------------------------------------------------------------------------

WRITER = """
import sys
from memvault import Message
from memvault.sync import Memory

url, worker = sys.argv[1], sys.argv[2]
with Memory.open(url) as memory:
    for i in range(60):
        memory.save_messages([Message.user(f"w{worker} n{i}", id=f"w{worker}-{i}")],
                             thread_id="shared", resource_id="ann")
        if i % 10 == 0:
            memory.search_messages(resource_id="ann", query=f"w{worker}")
    memory.delete_messages([f"w{worker}-0"], thread_id="shared", resource_id="ann")
print("done")
"""


async def test_processes_writing_one_encrypted_file_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Locks between processes surface as SQLCipher's own exception classes: the store must
    wait and retry them like the standard library's ("database is locked" never escapes)."""
    url = encrypted_url(tmp_path / "m.db", monkeypatch) + "&busy_timeout=60"
    await _make(url)
    workers = [await asyncio.create_subprocess_exec(
        sys.executable, "-c", WRITER, url, str(n), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=dict(os.environ)) for n in range(4)]
    outputs = [await w.communicate() for w in workers]
    for worker, (out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0 and out.decode().strip() == "done", err.decode()[-2000:]
    async with await Memory.open(url) as memory:
        saved = await memory.get_messages(thread_id="shared", resource_id="ann")
        assert sorted(m.id for m in saved) == sorted(f"w{n}-{i}" for n in range(4) for i in range(1, 60))
        assert [m.seq for m in saved] == sorted(m.seq for m in saved)
        assert len(await memory.search_messages(resource_id="ann", query="w2", limit=100)) == 59


async def test_a_lock_on_an_encrypted_file_is_waited_for_then_a_typed_error(tmp_path: Path) -> None:
    """SQLCipher raises its own OperationalError for "database is locked": the store retries it
    until ``busy_timeout`` and then raises StoreError, as with the standard library's."""
    import sqlcipher3.dbapi2 as sqlcipher

    db = tmp_path / "m.db"
    memory = Memory(await SqliteStore.open(db, encryption_key=RAW_KEY, busy_timeout=0.3))
    other = sqlcipher.connect(str(db), isolation_level=None)
    try:
        await memory.save_messages([Message.user("first")], thread_id="t", resource_id="ann")
        other.execute(f"PRAGMA key = \"x'{RAW_KEY.hex()}'\"")
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreError, match="locked"):
            await memory.save_messages([Message.user("blocked")], thread_id="t", resource_id="ann")
        assert [m.text for m in await memory.get_messages(thread_id="t", resource_id="ann")] == ["first"]
        asyncio.get_running_loop().call_later(0.1, other.execute, "COMMIT")
        await memory.save_messages([Message.user("waited")], thread_id="t", resource_id="ann")
        saved = await memory.get_messages(thread_id="t", resource_id="ann")
        assert [m.text for m in saved] == ["first", "waited"]
    finally:
        other.close()
        await memory.close()
