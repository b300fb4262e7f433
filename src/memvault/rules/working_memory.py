"""Working memory: a small note the agent maintains and that is fed to the model every turn.

Scope: ``"resource"`` (one note per user, shared by all their threads; the default) or
``"thread"`` (one per conversation). Format, from the options:

- free text (no template, no schema);
- Markdown from a ``template`` (the note starts as the template and the model fills it in);
- JSON checked against a ``schema``: a pydantic model class or a JSON Schema dict.

Modes: ``append`` (the default) merges: JSON is deep-merged (objects merge recursively, arrays
gain the items they lack, ``null`` deletes a key, other values replace); text is appended on a new
line. ``replace`` replaces the whole note. Updates run atomically in the store.

Changing a note's format (text or Markdown to a JSON schema, or back) leaves the stored note in the
old format. ``replace`` always works, whatever the stored content: it does not read it. ``append``
cannot merge into content of another format: it raises :class:`memvault.errors.ValidationError`
saying to use ``mode="replace"``, and writes nothing. For a JSON note that is stored content that
is not a JSON object (and a merge that fails the schema only because the stored note, written
under another schema, does not match it says so); for a text or Markdown note, stored content
that is a JSON object (what a JSON note stores; a text note that happens to be exactly a JSON
object is refused the same way). Reading a note never parses it: it returns the stored text
whatever the format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import pydantic

from memvault.errors import ValidationError, shown
from memvault.model import check_json, check_text, note_key

Scope = Literal["resource", "thread"]
Mode = Literal["append", "replace"]
Format = Literal["text", "markdown", "json"]
TOOL_NAME = "update_working_memory"


DEFAULT_MAX_BYTES = 64 * 1024
"""The default cap on a working-memory note (UTF-8 bytes): it is fed to the model every turn."""


@dataclass(frozen=True)
class WorkingMemoryOptions:
    """How working memory is scoped and shaped.

    Examples::

        WorkingMemoryOptions()                                  # free text, one per user
        WorkingMemoryOptions(template="# User\\n- Name:\\n- Likes:\\n")   # Markdown
        WorkingMemoryOptions(schema=UserProfile, scope="thread")   # JSON checked by a pydantic model

    ``max_bytes`` caps the note (default 64 KiB, ``None``: no cap): an update that would make it
    longer is refused with a :class:`ValidationError` and writes nothing.
    """

    enabled: bool = True
    scope: Scope = "resource"
    template: str | None = None
    schema: type[pydantic.BaseModel] | dict[str, Any] | None = None
    max_bytes: int | None = DEFAULT_MAX_BYTES

    def __post_init__(self) -> None:
        cap = self.max_bytes
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
            raise ValidationError(f"max_bytes must be a positive integer or None, got {shown(cap)}")
        if self.scope not in ("resource", "thread"):
            raise ValidationError(f"scope must be 'resource' or 'thread', got {shown(self.scope)}")
        if self.template is not None and self.schema is not None:
            raise ValidationError("give a Markdown template or a JSON schema, not both")
        if isinstance(self.schema, dict):
            import jsonschema  # loaded only for a note with a JSON Schema

            try:
                jsonschema.Draft202012Validator.check_schema(self.schema)
            except jsonschema.SchemaError as exc:
                raise ValidationError(f"invalid JSON Schema for working memory: {exc.message}") from None

    @property
    def format(self) -> Format:
        if self.schema is not None:
            return "json"
        return "markdown" if self.template is not None else "text"

    def json_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the note (from the pydantic model when one was given)."""
        if self.schema is None:
            return None
        if isinstance(self.schema, dict):
            return self.schema
        return self.schema.model_json_schema()


def key(scope: Scope, thread_id: str | None) -> str:
    """The store key of a working memory: ``"resource"`` or ``"thread:<id>"``."""
    if scope == "resource":
        return note_key(None)
    if not thread_id:
        raise ValidationError("thread-scoped working memory needs a thread_id")
    return note_key(thread_id)


def note_scope(thread_id: str | None) -> Scope:
    """The scope that names the note a caller picks by giving (or not) a ``thread_id``: the
    thread's note with one, the resource's without (for faces that let the caller choose)."""
    return "resource" if thread_id is None else "thread"


def deep_merge(current: Any, update: Any) -> Any:
    """Merge ``update`` into ``current`` (see the module doc); returns a new value."""
    if isinstance(current, dict) and isinstance(update, dict):
        merged = dict(current)
        for name, value in update.items():
            if value is None:
                merged.pop(name, None)
            elif name in merged:
                merged[name] = deep_merge(merged[name], value)
            else:
                merged[name] = _without_nulls(value)
        return merged
    if isinstance(current, list) and isinstance(update, list):
        seen = {json.dumps(item, sort_keys=True) for item in current}
        merged_list = list(current)
        for item in update:
            marker = json.dumps(item, sort_keys=True)
            if marker not in seen:
                seen.add(marker)
                merged_list.append(item)
        return merged_list
    return _without_nulls(update)


def _without_nulls(value: Any) -> Any:
    """``value`` with every null-valued key removed, at any depth (null means "delete")."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def parse_update(options: WorkingMemoryOptions, update: Any) -> Any:
    """Check an update's type for the format: a JSON object (or its text) for JSON, else text."""
    if options.format == "json":
        if isinstance(update, str):
            try:
                update = json.loads(update)
            except json.JSONDecodeError as exc:
                raise ValidationError(f"working memory update is not valid JSON: {exc}") from None
        if not isinstance(update, dict):
            raise ValidationError("a JSON working memory is updated with a JSON object")
        try:
            return check_json(update)
        except ValueError as exc:
            raise ValidationError(f"working memory update: {exc}") from None
    if not isinstance(update, str):
        raise ValidationError(
            f"a {options.format} working memory is updated with a string, got {type(update).__name__}"
        )
    try:
        return check_text(update)
    except ValueError as exc:
        raise ValidationError(f"working memory update: {exc}") from None


def apply(options: WorkingMemoryOptions, current: str | None, update: Any, mode: Mode) -> str:
    """The new stored content after applying ``update`` in ``mode`` to ``current``; a result over
    ``options.max_bytes`` is a :class:`ValidationError` (nothing is written)."""
    content = _apply(options, current, update, mode)
    size = len(content.encode())
    if options.max_bytes is not None and size > options.max_bytes:
        raise ValidationError(
            f"the working memory would be {size:,} bytes, over its limit of {options.max_bytes:,} "
            "(WorkingMemoryOptions.max_bytes): keep the note short, rewrite it with mode='replace', "
            "or raise the limit")
    return content


def _apply(options: WorkingMemoryOptions, current: str | None, update: Any, mode: Mode) -> str:
    if mode not in ("append", "replace"):
        raise ValidationError(f"mode must be 'append' or 'replace', got {shown(mode)}")
    value = parse_update(options, update)
    if options.format == "json":
        if mode == "replace":
            validate(options, value)
            return json.dumps(value, ensure_ascii=False)
        base = stored_object(current)
        result = deep_merge(base, value)
        try:
            validate(options, result)
        except ValidationError as exc:
            try:
                validate(options, base)
            except ValidationError:
                raise ValidationError(
                    f"{exc} (the stored note itself does not match the current schema: it was "
                    "written under another one; write the whole note with mode='replace')"
                ) from None
            raise
        return json.dumps(result, ensure_ascii=False)
    if mode == "replace" or not current or current == options.template:
        return str(value)
    if _json_object(current) is not None:
        raise ValidationError(
            f"cannot append to the working memory: it holds a JSON object (a note written with a "
            f"schema) and this note is {options.format}; write the whole note with "
            "mode='replace' (read the old one first to carry over what it says)"
        )
    return current.rstrip("\n") + "\n" + str(value)


def stored_object(current: str | None) -> dict[str, Any]:
    """The stored JSON note as an object (``{}`` when never written). Content of another format
    (a text or Markdown note from before the schema was set, or anything not a JSON object) is a
    :class:`ValidationError` that says to use ``mode="replace"``."""
    if not current:
        return {}
    value = _json_object(current)
    if value is None:
        raise ValidationError(
            "cannot append to the working memory: its stored content is not a JSON object (it was "
            "written as text or Markdown, before the schema was set); write the whole note with "
            "mode='replace' (read the old one first to carry over what it says)"
        )
    return value


def _json_object(content: str) -> dict[str, Any] | None:
    """``content`` parsed when it is a JSON object, else None (never raises)."""
    if not content.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(content)
    except (ValueError, RecursionError):  # not JSON, integers over 4,300 digits, deep nesting
        return None
    return value if isinstance(value, dict) else None


def validate(options: WorkingMemoryOptions, value: Any) -> None:
    """Check a JSON note against the schema (pydantic model or JSON Schema)."""
    if isinstance(options.schema, dict):
        import jsonschema

        errors = sorted(
            jsonschema.Draft202012Validator(options.schema).iter_errors(value), key=str
        )
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "(root)"
            raise ValidationError(f"working memory does not match its schema at {where}: "
                                  f"{errors[0].message}")
    elif options.schema is not None:
        try:
            options.schema.model_validate(value)
        except pydantic.ValidationError as exc:
            raise ValidationError(f"working memory does not match {options.schema.__name__}: "
                                  f"{exc.errors(include_url=False)[0]['msg']}") from None


def initial(options: WorkingMemoryOptions) -> str:
    """What an empty note shows: the template, ``{}`` for JSON, or nothing."""
    if options.format == "json":
        return "{}"
    return options.template or ""


def instructions(options: WorkingMemoryOptions, content: str | None) -> str:
    """System-prompt text that shows the current note and tells the model how to keep it."""
    shown = content if content else initial(options)
    what = {
        "text": "free text",
        "markdown": "Markdown following the template below",
        "json": "a JSON object matching the schema of the tool's `memory` argument",
    }[options.format]
    scope = "this user, across all conversations" if options.scope == "resource" else (
        "this conversation"
    )
    return (
        f"You keep a working memory about {scope}: {what}. "
        f"When you learn something worth keeping (name, preferences, goals, facts about the "
        f"user or task), call `{TOOL_NAME}` with only what is new; it is merged into the note. "
        "Never store secrets or one-off details. Do not mention the working memory to the user.\n"
        f"<working_memory>\n{shown}\n</working_memory>"
    )


def tool_definition(options: WorkingMemoryOptions) -> dict[str, Any]:
    """The ``update_working_memory`` tool in OpenAI function format, ready for a model."""
    schema = dict(options.json_schema() or {})
    definitions = schema.pop("$defs", None)  # references point at the parameters' root
    memory: dict[str, Any]
    if options.format == "json":
        memory = {**schema, "description": "Only the fields to add or change; null deletes a field."}
    else:
        memory = {"type": "string", "description": "The text to add to the working memory."}
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Save what is worth remembering about the user or task in the working "
            "memory. By default it is merged into the existing note (append).",
            "parameters": {
                "type": "object",
                "properties": {
                    "memory": memory,
                    "mode": {
                        "type": "string",
                        "enum": ["append", "replace"],
                        "default": "append",
                        "description": "append merges into the note (use this). replace is "
                        "dangerous: it erases everything not in `memory`.",
                    },
                },
                "required": ["memory"],
                **({"$defs": definitions} if definitions else {}),
            },
        },
    }
