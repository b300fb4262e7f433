"""Working memory: text and JSON notes, merge modes, schemas, scopes, atomic updates."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from memvault import Memory, ValidationError
from memvault.testing.support import with_working_memory

R = "alice"


class Prefs(BaseModel):
    drink: str | None = None
    food: str | None = None


class Profile(BaseModel):
    name: str | None = None
    likes: list[str] = []
    prefs: Prefs | None = None


PROFILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "likes": {"type": "array", "items": {"type": "string"}},
        "prefs": {
            "type": "object",
            "properties": {"drink": {"type": "string"}, "food": {"type": "string"}},
        },
    },
}
SCHEMAS = pytest.mark.parametrize("schema", [Profile, PROFILE_SCHEMA], ids=["pydantic", "json-schema"])


async def test_text_append_and_replace(memory: Memory) -> None:
    assert await memory.get_working_memory(resource_id=R) is None
    steps: list[tuple[str, Literal["append", "replace"], str]] = [
             ("Name: Ada", "append", "Name: Ada"),
             ("Likes: tea 🍵", "append", "Name: Ada\nLikes: tea 🍵"),
             ("Reset", "replace", "Reset"),
             ("More", "append", "Reset\nMore")]
    for update, mode, expected in steps:
        returned = await memory.update_working_memory(update, resource_id=R, mode=mode)
        assert returned == expected
        assert await memory.get_working_memory(resource_id=R) == expected


async def test_markdown_template_is_filled_in(memory: Memory) -> None:
    template = "# User\n- Name:\n"
    notes = with_working_memory(memory, template=template)
    assert template in await notes.working_memory_instructions(resource_id=R)
    filled = "# User\n- Name: Ada\n"
    assert await notes.update_working_memory(filled, resource_id=R) == filled
    assert await notes.get_working_memory(resource_id=R) == filled


@SCHEMAS
async def test_json_deep_merge(memory: Memory, schema: Any) -> None:
    notes = with_working_memory(memory, schema=schema)
    steps: list[tuple[Any, Literal["append", "replace"], dict[str, Any]]] = [
        ({"name": "Ada", "prefs": {"drink": "tea"}}, "append",
         {"name": "Ada", "prefs": {"drink": "tea"}}),
        ('{"prefs": {"food": "rice"}, "likes": ["tea"]}', "append",  # JSON text works too
         {"name": "Ada", "prefs": {"drink": "tea", "food": "rice"}, "likes": ["tea"]}),
        ({"likes": ["tea", "go"], "prefs": {"drink": "coffee"}}, "append",
         {"name": "Ada", "prefs": {"drink": "coffee", "food": "rice"}, "likes": ["tea", "go"]}),
        ({"name": None, "prefs": {"food": None}}, "append",  # null deletes
         {"prefs": {"drink": "coffee"}, "likes": ["tea", "go"]}),
        ({"name": "Bob"}, "replace", {"name": "Bob"}),
    ]
    for update, mode, expected in steps:
        returned = await notes.update_working_memory(update, resource_id=R, mode=mode)
        assert json.loads(returned) == expected
        stored = await notes.get_working_memory(resource_id=R)
        assert stored is not None and json.loads(stored) == expected


@SCHEMAS
@pytest.mark.parametrize(
    ("update", "mode"),
    [({"likes": "not a list"}, "append"), ({"name": 5}, "append"),
     ({"prefs": {"drink": ["x"]}}, "append"), ({"likes": [1]}, "replace"),
     ("not json", "append"), ("[1, 2]", "append"), (["a"], "append"), ({"name": "x"}, "merge")],
)
async def test_invalid_json_update_changes_nothing(
    memory: Memory, schema: Any, update: Any, mode: str
) -> None:
    notes = with_working_memory(memory, schema=schema)
    await notes.update_working_memory({"name": "Ada", "likes": ["tea"]}, resource_id=R)
    before = await notes.get_working_memory(resource_id=R)
    with pytest.raises(ValidationError):
        await notes.update_working_memory(update, resource_id=R, mode=mode)  # type: ignore[arg-type]
    assert await notes.get_working_memory(resource_id=R) == before


@pytest.mark.parametrize("update", [{"a": 1}, 3, None, "nul \x00"])
async def test_invalid_text_update_changes_nothing(memory: Memory, update: Any) -> None:
    await memory.update_working_memory("kept", resource_id=R)
    with pytest.raises(ValidationError):
        await memory.update_working_memory(update, resource_id=R)
    assert await memory.get_working_memory(resource_id=R) == "kept"


async def test_resource_scope_is_shared_by_all_threads(memory: Memory) -> None:
    await memory.update_working_memory("likes tea", resource_id=R, thread_id="t1")
    for thread_id in ("t1", "t2", None):
        assert await memory.get_working_memory(resource_id=R, thread_id=thread_id) == "likes tea"


async def test_thread_scope_is_per_thread(memory: Memory, thread_scoped: Memory) -> None:
    await thread_scoped.update_working_memory("in t1", resource_id=R, thread_id="t1")
    await thread_scoped.update_working_memory("in t2", resource_id=R, thread_id="t2")
    await memory.update_working_memory("for the resource", resource_id=R)
    assert await thread_scoped.get_working_memory(resource_id=R, thread_id="t1") == "in t1"
    assert await thread_scoped.get_working_memory(resource_id=R, thread_id="t2") == "in t2"
    assert await thread_scoped.get_working_memory(resource_id=R, thread_id="t3") is None
    assert await memory.get_working_memory(resource_id=R) == "for the resource"
    with pytest.raises(ValidationError, match="thread_id"):
        await thread_scoped.get_working_memory(resource_id=R)
    with pytest.raises(ValidationError, match="thread_id"):
        await thread_scoped.update_working_memory("x", resource_id=R)


@pytest.mark.parametrize("scope", ["resource", "thread"])
@pytest.mark.parametrize("kind", ["text", "json"])
async def test_concurrent_appends_are_all_kept(memory: Memory, scope: str, kind: str) -> None:
    if kind == "json":
        notes = with_working_memory(memory, scope=scope, schema={
            "type": "object", "additionalProperties": {"type": "integer"}})
        updates: list[Any] = [{f"k{i}": i} for i in range(20)]
    else:
        notes = with_working_memory(memory, scope=scope)
        updates = [f"line {i}" for i in range(20)]
    await asyncio.gather(*(notes.update_working_memory(u, resource_id=R, thread_id="t")
                           for u in updates))
    stored = await notes.get_working_memory(resource_id=R, thread_id="t")
    assert stored is not None
    if kind == "json":
        assert json.loads(stored) == {f"k{i}": i for i in range(20)}
    else:
        assert sorted(stored.split("\n")) == sorted(updates)


# a note whose format changed (text <-> JSON schema)

NOT_AN_OBJECT = ["Name: Ada\nLikes: tea", "[1, 2]", '"just a string"', "{not json", "1" * 5000, "{" * 3000]
"""Stored notes a JSON note cannot merge into: text, JSON that is not an object, broken JSON."""


@SCHEMAS
@pytest.mark.parametrize("old", NOT_AN_OBJECT)
async def test_text_to_schema_replace_works_and_append_says_how(
    memory: Memory, schema: Any, old: str
) -> None:
    await memory.update_working_memory(old, resource_id=R, mode="replace")  # written as text
    notes = with_working_memory(memory, schema=schema)
    assert await notes.get_working_memory(resource_id=R) == old  # reading never parses
    assert old[:20] in await notes.working_memory_instructions(resource_id=R)
    with pytest.raises(ValidationError, match="mode='replace'") as refused:
        await notes.update_working_memory({"name": "Ada"}, resource_id=R)
    assert "JSONDecodeError" not in str(refused.value)
    assert await notes.get_working_memory(resource_id=R) == old  # nothing written
    replaced = await notes.update_working_memory({"name": "Ada"}, resource_id=R, mode="replace")
    assert json.loads(replaced) == {"name": "Ada"}
    merged = await notes.update_working_memory({"likes": ["tea"]}, resource_id=R)
    assert json.loads(merged) == {"name": "Ada", "likes": ["tea"]}


@SCHEMAS
@pytest.mark.parametrize("template", [None, "# User\n- Name:\n"])
async def test_schema_to_text_replace_works_and_append_says_how(
    memory: Memory, schema: Any, template: str | None
) -> None:
    notes = with_working_memory(memory, schema=schema)
    stored = await notes.update_working_memory({"name": "Ada", "likes": ["tea"]}, resource_id=R)
    text = with_working_memory(memory, template=template)
    assert await text.get_working_memory(resource_id=R) == stored
    with pytest.raises(ValidationError, match="mode='replace'"):
        await text.update_working_memory("Likes: coffee", resource_id=R)
    assert await text.get_working_memory(resource_id=R) == stored
    assert await text.update_working_memory("Name: Ada", resource_id=R, mode="replace") == "Name: Ada"
    assert await text.update_working_memory("Likes: tea", resource_id=R) == "Name: Ada\nLikes: tea"


@SCHEMAS
async def test_schema_change_append_names_the_old_note(memory: Memory, schema: Any) -> None:
    await memory.update_working_memory('{"name": 5, "extra": true}', resource_id=R, mode="replace")
    notes = with_working_memory(memory, schema=schema)
    with pytest.raises(ValidationError, match="stored note itself does not match"):
        await notes.update_working_memory({"likes": ["tea"]}, resource_id=R)
    assert json.loads(await notes.update_working_memory({"likes": ["tea"]}, resource_id=R,
                                                        mode="replace")) == {"likes": ["tea"]}


@pytest.mark.parametrize("scope", ["resource", "thread"])
async def test_the_note_has_a_size_cap(memory: Memory, scope: str) -> None:
    """An update that would make the note longer than ``max_bytes`` is refused, says so, and
    writes nothing; a replace with a shorter note works; ``None`` lifts the cap."""
    capped = with_working_memory(memory, scope=scope, max_bytes=1000)
    where: dict[str, Any] = {"resource_id": "ada", "thread_id": "t1"}
    await capped.update_working_memory("a" * 600, **where)
    with pytest.raises(ValidationError, match=r"1,200 bytes, over its limit of 1,000.*max_bytes"):
        await capped.update_working_memory("b" * 599, **where)  # 600 + newline + 599
    assert await capped.get_working_memory(**where) == "a" * 600
    assert await capped.update_working_memory("é" * 500, mode="replace", **where) == "é" * 500  # 1,000 bytes
    with pytest.raises(ValidationError, match="max_bytes"):
        await capped.update_working_memory("é" * 501, mode="replace", **where)
    uncapped = with_working_memory(memory, scope=scope, max_bytes=None)
    assert len(await uncapped.update_working_memory("c" * 100_000, mode="replace", **where)) == 100_000


@pytest.mark.parametrize("scope", ["resource", "thread"])
async def test_a_note_can_be_deleted(memory: Memory, scope: str) -> None:
    """``delete_working_memory`` removes the note (the next read is ``None``), says whether there
    was one, and leaves the other scope's note alone."""
    view = with_working_memory(memory, scope=scope)
    other = with_working_memory(memory, scope="thread" if scope == "resource" else "resource")
    await view.update_working_memory("mine", resource_id="ada", thread_id="t1")
    await other.update_working_memory("the other", resource_id="ada", thread_id="t1")
    assert await view.delete_working_memory(resource_id="ada", thread_id="t1") is True
    assert await view.get_working_memory(resource_id="ada", thread_id="t1") is None
    assert await view.delete_working_memory(resource_id="ada", thread_id="t1") is False
    assert await other.get_working_memory(resource_id="ada", thread_id="t1") == "the other"
