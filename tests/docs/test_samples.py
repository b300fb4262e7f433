"""Every code sample in the documentation runs.

Samples are the fenced blocks of ``docs/*.md`` and ``README.md`` (``docs/benchmarks*.md`` are
left alone: their commands take minutes and need data sets). One test per block, named
``file:line`` after the block's opening fence:

- a ``python`` block runs as a standalone script with this interpreter, in a fresh folder with
  ``HOME`` and the XDG folders inside it (so the default SQLite file lands there), offline
  (``HF_HUB_OFFLINE=1``), and must exit 0 within :data:`TIMEOUT` seconds;
- a ``bash``, ``sh``, ``shell`` or ``console`` block runs its lines that start with
  ``memvault `` (or ``$ memvault ``; a trailing backslash continues a line) one by one, in one
  fresh folder per block, with the venv's ``memvault`` first on ``PATH``; each must exit 0. Other
  lines (``pip install ...``) are not run. Commands that serve until stopped are not run either:
  they must be listed in :data:`LONG_RUNNING` with the reason, and the test checks that the
  command exists (``memvault <command> --help``); their own tests exercise them.

PostgreSQL: the literal URL ``postgresql://postgres@localhost/memvault`` (with any query string)
in a sample is replaced by ``MEMVAULT_TEST_POSTGRES_URL`` with a fresh ``?schema=`` per schema the
sample names, dropped afterwards. Without that variable such samples skip and say why, unless
``MEMVAULT_REQUIRE_POSTGRES=1`` (then they fail), as in the rest of the suite
(``tests/postgres_server.py``).
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

import pytest

import postgres_server

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120
"""Seconds one python block, or one shell command, may take."""

PYTHON_LANGS = {"python", "py", "python3"}
SHELL_LANGS = {"bash", "sh", "shell", "console"}

POSTGRES_LITERAL = "postgresql://postgres@localhost/memvault"
"""The URL samples write for a local PostgreSQL server; the harness points it at the test server."""
_POSTGRES = re.compile(re.escape(POSTGRES_LITERAL) + r"(?![\w/.-])(?:\?(?P<query>[^\s\"'`)]*))?")

LONG_RUNNING: dict[str, str] = {
    "serve": "serves the HTTP API until stopped; exercised by the server's own tests",
    "studio": "serves the Studio page until stopped; exercised by the Studio's own tests",
    "mcp": "runs the MCP server on stdin/stdout until its client leaves; exercised by tests/mcp",
    "chat": "an interactive terminal chat (without --offline it may call a remote model); "
    "exercised by tests/cli/test_chat.py",
}
"""Commands the shell runner does not run, with why. ``chat --offline`` with its input piped
in is run (it ends at the end of its input)."""


@dataclass(frozen=True)
class Sample:
    path: Path
    line: int
    lang: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    """The Markdown files whose samples run."""
    docs = sorted(p for p in (ROOT / "docs").glob("*.md") if not p.name.startswith("benchmarks"))
    return [ROOT / "README.md", *docs]


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)")


def samples_of(path: Path) -> list[Sample]:
    """The fenced code blocks of one Markdown file, with the line of each opening fence."""
    found: list[Sample] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        indent, fence, lang = match["indent"], match["fence"], match["info"].lower()
        start, body = i + 1, []
        i += 1
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                break
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1
        found.append(Sample(path, start, lang, "\n".join(body) + "\n"))
    return found


def all_samples() -> list[Sample]:
    return [s for path in documents() for s in samples_of(path)]


def commands_of(code: str) -> list[str]:
    """The ``memvault`` command lines of a shell block (continuations joined, prompts removed)."""
    joined: list[str] = []
    pending = ""
    for raw in code.splitlines():
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        joined.append(line)
    commands = []
    for line in joined:
        line = line.removeprefix("$ ")
        if line.startswith("memvault "):
            commands.append(line)
    return commands


def subcommand(command: str) -> str:
    """The first word after ``memvault`` (``serve`` in ``memvault serve --port 8000``)."""
    words = shlex.split(command, comments=True)
    return words[1] if len(words) > 1 else ""


def is_long_running(command: str) -> bool:
    name = subcommand(command)
    if name == "chat":
        return "--offline" not in shlex.split(command, comments=True)
    return name in LONG_RUNNING


PYTHON_SAMPLES = [s for s in all_samples() if s.lang in PYTHON_LANGS]
SHELL_SAMPLES = [s for s in all_samples() if s.lang in SHELL_LANGS and commands_of(s.code)]


def sample_env(home: Path) -> dict[str, str]:
    """The environment of a sample: offline, with its home and data folders in ``home``."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"MEMVAULT_DB", "OPENAI_API_KEY", "OPENAI_BASE_URL", "MEMVAULT_MODEL"}}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        PYTHONUNBUFFERED="1",
        COLUMNS="100",
    )
    return env


def rewrite_postgres(code: str, server: str, prefix: str) -> tuple[str, list[str]]:
    """``code`` with each sample PostgreSQL URL pointed at ``server``: the schema it names (or
    ``public``) becomes ``{prefix}_{name}``, its other options are kept. Also the schemas used."""
    schemas: dict[str, str] = {}

    def replace(match: re.Match[str]) -> str:
        params = dict(parse_qsl(match["query"] or ""))
        named = params.pop("schema", "public")
        fresh = schemas.setdefault(named, f"{prefix}_{re.sub(r'[^a-z0-9_]', '_', named.lower())}")
        url = postgres_server.with_schema(server, fresh)
        return postgres_server.with_params(url, **params) if params else url

    return _POSTGRES.sub(replace, code), list(schemas.values())


def with_test_postgres(code: str, sample: Sample) -> tuple[str, str | None, list[str]]:
    """``code`` pointed at the test server (:func:`rewrite_postgres`), the server's URL and the
    schemas to drop afterwards; skips (or fails, see the module doc) without a server."""
    if not _POSTGRES.search(code):
        return code, None, []
    server = postgres_server.postgres_url(f"the docs sample {sample.id}")
    rewritten, schemas = rewrite_postgres(code, server, f"docs_{uuid.uuid4().hex[:8]}")
    return rewritten, server, schemas


def drop_schemas(server: str | None, schemas: list[str]) -> None:
    for schema in schemas:
        assert server is not None
        asyncio.run(postgres_server.drop_schema(server, schema))


def test_the_docs_have_samples() -> None:
    """The harness finds the samples (a broken fence parser would make every test vanish)."""
    names = {s.path.name for s in PYTHON_SAMPLES}
    assert {"README.md", "getting-started.md", "concepts.md", "stores.md", "embedders.md"} <= names
    assert {s.path.name for s in SHELL_SAMPLES} >= {"cli.md"}


def test_the_fence_parser() -> None:
    text = "intro\n```python\nprint(1)\n```\n\n  ~~~bash\n  memvault stats \\\n    --json\n  ~~~\n"
    path = ROOT / "docs" / "parser-check.md"
    sample_list = _parse(text, path)
    assert [(s.line, s.lang, s.code) for s in sample_list] == [
        (2, "python", "print(1)\n"),
        (6, "bash", "memvault stats \\\n  --json\n"),
    ]
    assert commands_of(sample_list[1].code) == ["memvault stats  --json"]
    assert commands_of("$ memvault demo --db sqlite:///a.db\npip install memvault\n") == [
        "memvault demo --db sqlite:///a.db"
    ]
    assert is_long_running("memvault serve --port 8000")
    assert is_long_running("memvault chat")
    assert not is_long_running("memvault chat --offline")
    assert not is_long_running("memvault threads list -r ada")


def _parse(text: str, path: Path) -> list[Sample]:
    """:func:`samples_of` on a text instead of a file."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        copy.write_text(text, encoding="utf-8")
        return [Sample(path, s.line, s.lang, s.code) for s in samples_of(copy)]


@pytest.mark.parametrize("sample", PYTHON_SAMPLES, ids=lambda s: s.id)
def test_python_sample(sample: Sample, tmp_path: Path) -> None:
    code, server, schemas = with_test_postgres(sample.code, sample)
    script = tmp_path / "sample.py"
    script.write_text(code, encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=sample_env(tmp_path),
            capture_output=True, text=True, timeout=TIMEOUT, check=False,
        )
    finally:
        drop_schemas(server, schemas)
    assert done.returncode == 0, (
        f"{sample.id} exited with {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )


@pytest.mark.parametrize("sample", SHELL_SAMPLES, ids=lambda s: s.id)
def test_shell_sample(sample: Sample, tmp_path: Path) -> None:
    code, server, schemas = with_test_postgres(sample.code, sample)
    env = sample_env(tmp_path)
    try:
        for command in commands_of(code):
            if is_long_running(command):
                name = subcommand(command)
                assert name in LONG_RUNNING, f"{sample.id}: {command!r} is not in LONG_RUNNING"
                check = f"memvault {name} --help"
                done = subprocess.run(check, shell=True, executable="/bin/bash", cwd=tmp_path, env=env,
                                      capture_output=True, text=True, timeout=TIMEOUT, check=False)
                assert done.returncode == 0, f"{sample.id}: `{check}` failed: the command does not exist?\n" \
                    f"{done.stdout}\n{done.stderr}"
                continue
            done = subprocess.run(command, shell=True, executable="/bin/bash", cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=TIMEOUT, check=False,
                                  stdin=subprocess.DEVNULL)
            assert done.returncode == 0, (
                f"{sample.id}: `{command}` exited with {done.returncode}\n--- stdout\n{done.stdout}"
                f"\n--- stderr\n{done.stderr}"
            )
    finally:
        drop_schemas(server, schemas)


def test_postgres_literal_is_rewritten() -> None:
    """Each schema a sample names gets its own fresh one; other options are kept."""
    code = (f'a = "{POSTGRES_LITERAL}"\n'
            f"b = '{POSTGRES_LITERAL}?schema=agents&max_size=5'\n"
            f"memvault copy --from sqlite:///a.db --to {POSTGRES_LITERAL}?schema=agents\n"
            f"c = '{POSTGRES_LITERAL}_other'\n")
    rewritten, schemas = rewrite_postgres(code, "postgresql://u@h:5432/test", "docs_x")
    assert schemas == ["docs_x_public", "docs_x_agents"]
    assert rewritten == (
        'a = "postgresql://u@h:5432/test?schema=docs_x_public"\n'
        "b = 'postgresql://u@h:5432/test?schema=docs_x_agents&max_size=5'\n"
        "memvault copy --from sqlite:///a.db --to postgresql://u@h:5432/test?schema=docs_x_agents\n"
        f"c = '{POSTGRES_LITERAL}_other'\n"
    )


_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*$", re.MULTILINE)


def anchors_of(path: Path) -> set[str]:
    """The anchors GitHub makes for a Markdown file's headings (fenced code left out)."""
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    return {re.sub(r"[^\w\- ]", "", m["title"].lower()).replace(" ", "-") for m in _HEADING.finditer(text)}


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(path: Path) -> None:
    """Every relative link of the docs names a file that exists, and a heading in it."""
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    broken = []
    for match in _LINK.finditer(text):
        target = match["target"]
        if re.match(r"^[a-z]+:", target):
            continue  # https://..., mailto:...
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target}: no file {linked.relative_to(ROOT)}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors_of(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.relative_to(ROOT)}")
    assert not broken, f"{path.relative_to(ROOT)} has broken links:\n" + "\n".join(broken)
