"""Working memory: the deep merge, applying updates, schema checks, instructions and the tool."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import Memory, MemoryOptions, ValidationError, WorkingMemoryOptions
from memvault.rules.working_memory import TOOL_NAME, apply, deep_merge, instructions, tool_definition

# -- JSON strategies ---------------------------------------------------------------------------

keys = st.text("abcdef", min_size=1, max_size=2)
scalars = st.one_of(
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.text("xyz", max_size=3),
)
# plain JSON without nulls
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
objects = st.dictionaries(keys, values, max_size=5)
# an update: null (delete) or a null-free value under each top-level key
updates = st.dictionaries(keys, st.none() | values, max_size=5)
unique_lists = st.lists(values, max_size=5, unique_by=lambda v: canon(v))


def canon(value: Any) -> str:
    """Exact JSON identity (``1``, ``1.0`` and ``true`` differ, key order does not)."""
    return json.dumps(value, sort_keys=True)


def has_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(has_null(v) for v in value)
    return False


def check_merged(current: Any, update: Any, merged: Any) -> None:
    """The merge rules, checked structurally at every depth."""
    if isinstance(current, dict) and isinstance(update, dict):
        assert isinstance(merged, dict)
        for name in current.keys() - update.keys():
            assert canon(merged[name]) == canon(current[name])  # untouched keys survive
        for name, value in update.items():
            if value is None:
                assert name not in merged  # null deletes
            elif name in current:
                check_merged(current[name], value, merged[name])  # objects merge recursively
            else:
                assert canon(merged[name]) == canon(value)
        assert merged.keys() == (current.keys() | update.keys()) - {
            k for k, v in update.items() if v is None
        }
    elif isinstance(current, list) and isinstance(update, list):
        assert isinstance(merged, list)
        assert [canon(v) for v in merged[: len(current)]] == [canon(v) for v in current]
        seen = {canon(v) for v in current}
        added = [canon(v) for v in merged[len(current) :]]
        assert len(added) == len(set(added))  # no duplicates gained
        assert not seen & set(added)
        assert set(added) == {canon(v) for v in update} - seen  # every missing item added
    else:
        assert canon(merged) == canon(update)  # other values replace


# -- deep_merge --------------------------------------------------------------------------------


@given(updates)
def test_merge_into_empty_is_the_update_without_null_keys(update: dict[str, Any]) -> None:
    expected = {k: v for k, v in update.items() if v is not None}
    assert canon(deep_merge({}, update)) == canon(expected)


@given(objects, updates)
def test_merge_follows_the_rules_at_every_depth(current: dict, update: dict) -> None:
    check_merged(current, update, deep_merge(current, update))


@given(objects, updates)
def test_merge_is_idempotent(current: dict, update: dict) -> None:
    once = deep_merge(current, update)
    assert canon(deep_merge(once, update)) == canon(once)


@given(objects, updates)
def test_merge_returns_a_new_value(current: dict, update: dict) -> None:
    before = canon(current), canon(update)
    deep_merge(current, update)
    assert (canon(current), canon(update)) == before


@given(unique_lists, st.lists(values, max_size=6))
def test_arrays_keep_order_and_never_gain_duplicates(current: list, update: list) -> None:
    for wrap in (lambda v: v, lambda v: {"k": {"nested": v}}):
        merged = deep_merge(wrap(current), wrap(update))
        check_merged(wrap(current), wrap(update), merged)
        items = [canon(v) for v in (merged if isinstance(merged, list) else merged["k"]["nested"])]
        assert len(items) == len(set(items))


@st.composite
def deletions(draw: st.DrawFn) -> tuple[dict, list[str]]:
    """An object and the path (through nested objects) of one of its keys."""
    current = draw(st.dictionaries(keys, values, min_size=1, max_size=5))
    path, node = [], current
    while True:
        name = draw(st.sampled_from(sorted(node)))
        path.append(name)
        if not isinstance(node[name], dict) or not node[name] or draw(st.booleans()):
            return current, path
        node = node[name]


@given(deletions())
def test_null_deletes_a_key_at_any_depth(case: tuple[dict, list[str]]) -> None:
    current, path = case
    update: Any = None
    for name in reversed(path):
        update = {name: update}
    merged = deep_merge(current, update)
    expected = json.loads(json.dumps(current))
    node = expected
    for name in path[:-1]:
        node = node[name]
    del node[path[-1]]
    assert canon(merged) == canon(expected)


NESTED_NULLS = [
    pytest.param({}, {"a": {"b": None}}, id="under-a-new-key"),
    pytest.param({"a": 1}, {"a": {"b": None, "c": 1}}, id="under-a-replaced-scalar"),
    pytest.param({"a": [1]}, {"a": {"x": {"y": None}}}, id="under-a-replaced-array"),
]


@pytest.mark.parametrize(("current", "update"), NESTED_NULLS)
def test_nested_null_never_reaches_the_note(current: dict, update: dict) -> None:
    assert not has_null(deep_merge(current, update))


@pytest.mark.parametrize(("current", "update"), NESTED_NULLS)
def test_merge_with_nested_nulls_is_idempotent(current: dict, update: dict) -> None:
    once = deep_merge(current, update)
    assert deep_merge(once, update) == once


# -- apply -------------------------------------------------------------------------------------


class Profile(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    name: str | None = None
    likes: list[str] = []


PROFILE_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "likes": {"type": "array", "items": {"type": "string"}}},
    "additionalProperties": False,
}
TEMPLATE = "# User\n- Name:\n"
TEXT = WorkingMemoryOptions()
MARKDOWN = WorkingMemoryOptions(template=TEMPLATE)
SCHEMAS = [pytest.param(Profile, id="pydantic"), pytest.param(PROFILE_SCHEMA, id="json-schema")]


@pytest.mark.parametrize(
    ("options", "current", "update", "mode", "expected"),
    [
        (TEXT, None, "likes tea", "append", "likes tea"),
        (TEXT, "", "likes tea", "append", "likes tea"),
        (TEXT, "name Ada", "likes tea", "append", "name Ada\nlikes tea"),
        (TEXT, "name Ada\n\n", "likes tea", "append", "name Ada\nlikes tea"),
        (TEXT, "name Ada", "likes tea", "replace", "likes tea"),
        (TEXT, None, "likes tea", "replace", "likes tea"),
        (MARKDOWN, None, "# User\n- Name: Ada\n", "append", "# User\n- Name: Ada\n"),
        (MARKDOWN, TEMPLATE, "# User\n- Name: Ada\n", "append", "# User\n- Name: Ada\n"),
        (MARKDOWN, "# User\n- Name: Ada\n", "- Likes: tea", "append",
         "# User\n- Name: Ada\n- Likes: tea"),
        (MARKDOWN, "# User\n- Name: Ada\n", "# User\n- Name: Bo\n", "replace", "# User\n- Name: Bo\n"),
    ],
)
def test_apply_text_and_markdown(
    options: WorkingMemoryOptions, current: str | None, update: str, mode: Any, expected: str
) -> None:
    assert apply(options, current, update, mode) == expected


@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize(
    ("current", "update", "mode", "expected"),
    [
        (None, {"name": "Ada"}, "append", {"name": "Ada"}),
        ('{"name": "Ada"}', {"likes": ["tea"]}, "append", {"name": "Ada", "likes": ["tea"]}),
        ('{"likes": ["tea"]}', '{"likes": ["tea", "jazz"]}', "append", {"likes": ["tea", "jazz"]}),
        ('{"name": "Ada", "likes": ["tea"]}', {"name": None}, "append", {"likes": ["tea"]}),
        ('{"name": "Ada", "likes": ["tea"]}', {"likes": ["jazz"]}, "replace", {"likes": ["jazz"]}),
        ('{"name": "Ada"}', "{}", "replace", {}),
    ],
)
def test_apply_json(schema: Any, current: str | None, update: Any, mode: Any, expected: dict) -> None:
    options = WorkingMemoryOptions(schema=schema)
    assert json.loads(apply(options, current, update, mode)) == expected


@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize(
    "update",
    [
        pytest.param({"name": 5}, id="wrong-type"),
        pytest.param({"likes": "tea"}, id="array-expected"),
        pytest.param({"nickname": "A"}, id="unknown-field"),
        pytest.param('{"likes": [1]}', id="wrong-item-type-as-text"),
    ],
)
def test_apply_json_refuses_what_the_schema_refuses(schema: Any, update: Any) -> None:
    with pytest.raises(ValidationError, match=r"schema|Profile"):
        apply(WorkingMemoryOptions(schema=schema), '{"name": "Ada"}', update, "append")


@pytest.mark.parametrize(
    ("options", "update", "mode"),
    [
        pytest.param(TEXT, 5, "append", id="text-gets-non-string"),
        pytest.param(MARKDOWN, {"a": 1}, "append", id="markdown-gets-object"),
        pytest.param(TEXT, "a\x00b", "append", id="nul-byte"),
        pytest.param(TEXT, "a\ud800", "append", id="lone-surrogate"),
        pytest.param(TEXT, "fine", "merge", id="unknown-mode"),
        pytest.param(WorkingMemoryOptions(schema=Profile), "not json", "append", id="json-text-bad"),
        pytest.param(WorkingMemoryOptions(schema=Profile), "[1]", "append", id="json-array"),
        pytest.param(WorkingMemoryOptions(schema=Profile), ["a"], "append", id="json-list"),
        pytest.param(WorkingMemoryOptions(schema=Profile), {"name": float("nan")}, "append",
                     id="json-nan"),
    ],
)
def test_apply_refuses_bad_updates(options: WorkingMemoryOptions, update: Any, mode: Any) -> None:
    with pytest.raises(ValidationError):
        apply(options, "current", update, mode)


# -- options -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"schema": {"type": "nosuch"}}, id="unknown-type"),
        pytest.param({"schema": {"type": 5}}, id="type-not-string"),
        pytest.param({"schema": {"properties": []}}, id="properties-not-object"),
        pytest.param({"schema": {"required": "name"}}, id="required-not-array"),
        pytest.param({"schema": {"minLength": -1}}, id="negative-min-length"),
        pytest.param({"template": "# T", "schema": PROFILE_SCHEMA}, id="template-and-schema"),
        pytest.param({"scope": "user"}, id="unknown-scope"),
    ],
)
def test_bad_options_are_refused_at_creation(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        WorkingMemoryOptions(**fields)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (TEXT, "text"),
        (MARKDOWN, "markdown"),
        (WorkingMemoryOptions(schema=Profile), "json"),
        (WorkingMemoryOptions(schema=PROFILE_SCHEMA), "json"),
    ],
)
def test_format(options: WorkingMemoryOptions, expected: str) -> None:
    assert options.format == expected


# -- instructions and the tool ----------------------------------------------------------------

ALL_OPTIONS = [
    pytest.param(TEXT, "name Ada, likes green tea", id="text"),
    pytest.param(MARKDOWN, "# User\n- Name: Ada\n", id="markdown"),
    pytest.param(WorkingMemoryOptions(schema=Profile), '{"name": "Ada"}', id="pydantic"),
    pytest.param(WorkingMemoryOptions(schema=PROFILE_SCHEMA, scope="thread"), '{"likes": ["tea"]}',
                 id="json-schema"),
]


@pytest.mark.parametrize(("options", "content"), ALL_OPTIONS)
def test_instructions_show_the_current_note(options: WorkingMemoryOptions, content: str) -> None:
    text = instructions(options, content)
    assert f"<working_memory>\n{content}\n</working_memory>" in text
    assert TOOL_NAME in text


@pytest.mark.parametrize(
    ("options", "shown"),
    [(TEXT, ""), (MARKDOWN, TEMPLATE), (WorkingMemoryOptions(schema=Profile), "{}")],
)
def test_instructions_show_the_initial_note_when_empty(
    options: WorkingMemoryOptions, shown: str
) -> None:
    assert f"<working_memory>\n{shown}\n</working_memory>" in instructions(options, None)


@pytest.mark.parametrize(("options", "content"), ALL_OPTIONS)
def test_tool_definition_is_a_valid_openai_function(
    options: WorkingMemoryOptions, content: str
) -> None:
    tool = tool_definition(options)
    assert tool["type"] == "function"
    function = tool["function"]
    assert function["name"] == "update_working_memory" == TOOL_NAME
    assert function["description"]
    parameters = function["parameters"]
    jsonschema.Draft202012Validator.check_schema(parameters)
    assert parameters["type"] == "object"
    assert parameters["required"] == ["memory"]
    mode = parameters["properties"]["mode"]
    assert mode["enum"] == ["append", "replace"]
    assert mode["default"] == "append"
    assert "replace is dangerous" in mode["description"]
    json.dumps(tool)  # serialisable as sent to the API

    memory = parameters["properties"]["memory"]
    schema = options.json_schema()
    if schema is None:
        assert memory["type"] == "string"
        sample: Any = content
    else:
        assert {k: v for k, v in memory.items() if k != "description"} == {
            k: v for k, v in schema.items() if k != "description"
        }
        sample = json.loads(content)
    validator = jsonschema.Draft202012Validator(parameters)
    validator.validate({"memory": sample, "mode": "append"})
    assert not validator.is_valid({"memory": sample, "mode": "merge"})
    assert not validator.is_valid({"mode": "append"})


class Pet(pydantic.BaseModel):
    name: str


class Owner(pydantic.BaseModel):
    name: str | None = None
    pet: Pet | None = None


def test_tool_definition_of_a_nested_pydantic_model_resolves() -> None:
    parameters = tool_definition(WorkingMemoryOptions(schema=Owner))["function"]["parameters"]
    jsonschema.Draft202012Validator(parameters).validate(
        {"memory": {"name": "Ada", "pet": {"name": "Rex"}}}
    )


# -- through Memory ----------------------------------------------------------------------------


async def test_a_refused_update_leaves_the_note_unchanged() -> None:
    options = MemoryOptions(working_memory=WorkingMemoryOptions(schema=Profile))
    async with await Memory.open("memory://", options=options) as memory:
        await memory.update_working_memory({"name": "Ada"}, resource_id="r")
        with pytest.raises(ValidationError):
            await memory.update_working_memory({"name": 5}, resource_id="r")
        with pytest.raises(ValidationError):
            await memory.update_working_memory("[]", resource_id="r", mode="replace")
        assert json.loads(await memory.get_working_memory(resource_id="r") or "") == {"name": "Ada"}
        assert '{"name": "Ada"}' in await memory.working_memory_instructions(resource_id="r")
