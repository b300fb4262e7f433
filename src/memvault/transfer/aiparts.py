"""Message parts of the Vercel AI SDK's UI messages as memvault part dicts.

VoltAgent stores AI SDK 5 ``UIMessage`` parts; Mastra's format 2 stores AI SDK 4 parts with its
own extensions. Both come here; the result is a list of part dicts for
:meth:`memvault.model.Message.parse`. The mapping:

==========================================  ==================================================
source part                                 memvault parts
==========================================  ==================================================
``text``                                    ``text``
``reasoning`` (5: ``text``; 4: ``details``)  ``reasoning`` (one per text detail, with its
                                            signature); redacted details are not carried
``tool-NAME`` / ``dynamic-tool`` (5),       ``tool-call`` (id, name, input as ``args``), then,
``tool-invocation`` (4)                     once the tool ran, ``tool-result`` (``output``; an
                                            error or a denial is ``is_error`` with its text)
``file`` (5: ``url``; 4: ``data``)          ``file`` (a URL, or a ``data:`` URL; media type,
                                            file name)
``data-NAME``                               ``data`` named NAME
``source-url``, ``source-document``,        ``data`` named after the part type, holding the
``source`` (4)                              source's fields
``step-start``                              nothing (a UI boundary between model steps)
==========================================  ==================================================

``providerMetadata`` on a part is not carried. Anything else is not carried and counted under
its type (``skip`` is called with the reason).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Part = dict[str, Any]
Skip = Callable[[str], None]

_SOURCES = ("source-url", "source-document", "source")
_DONE = ("output-available", "result")
_ERRORS = ("output-error", "output-denied")


def _typed(parts: list[Any], skip: Skip) -> Iterator[tuple[Part, str]]:
    """Each part that is an object with a string ``type``, with that type (its provider
    metadata noted by :func:`_provider`); any other is skipped."""
    for part in parts:
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            skip("parts that are not objects with a type")
            continue
        _provider(part, skip)
        yield part, part["type"]


def v5_parts(parts: list[Any], skip: Skip) -> list[Part]:
    """AI SDK 5 ``UIMessage.parts`` (VoltAgent) as memvault part dicts."""
    out: list[Part] = []
    for part, kind in _typed(parts, skip):
        if kind == "text":
            out.append({"type": "text", "text": part.get("text", "")})
        elif kind == "reasoning":
            out.append({"type": "reasoning", "text": part.get("text", "")})
        elif kind == "dynamic-tool" or kind.startswith("tool-"):
            name = part.get("toolName") if kind == "dynamic-tool" else kind[len("tool-"):]
            out.extend(_tool(part.get("toolCallId"), name, part.get("input"), part.get("state"),
                             part.get("output"), part.get("errorText"), _denial(part), skip))
        elif kind == "file":
            out.append(_file(part.get("url"), part.get("mediaType"), part.get("filename")))
        else:
            out.extend(_other(part, skip))
    return out


def v4_parts(parts: list[Any], skip: Skip) -> list[Part]:
    """Mastra format 2 ``content.parts`` (AI SDK 4 parts and Mastra's) as memvault part dicts."""
    out: list[Part] = []
    for part, kind in _typed(parts, skip):
        if kind == "text":
            out.append({"type": "text", "text": part.get("text", "")})
        elif kind == "reasoning":
            out.extend(_reasoning_v4(part, skip))
        elif kind == "tool-invocation":
            call = part.get("toolInvocation")
            call = call if isinstance(call, dict) else {}
            error = call.get("errorText") if call.get("isError") or call.get("state") in _ERRORS else None
            if call.get("isError") and error is None:
                error = call.get("result")
            out.extend(_tool(call.get("toolCallId"), call.get("toolName"), call.get("args"),
                             call.get("state"), call.get("result"), error, _denial(call), skip))
        elif kind == "file":
            out.append(_file(_data_url(part.get("data"), part.get("mimeType")), part.get("mimeType"),
                             part.get("filename")))
        elif kind == "source" and isinstance(part.get("source"), dict):
            out.append({"type": "data", "name": "source", "data": part["source"]})
        else:
            out.extend(_other(part, skip))
    return out


def _reasoning_v4(part: Part, skip: Skip) -> list[Part]:
    details = part.get("details")
    if not isinstance(details, list) or not details:
        return [{"type": "reasoning", "text": part.get("reasoning", "")}]
    out: list[Part] = []
    for detail in details:
        if isinstance(detail, dict) and detail.get("type") == "text":
            reasoning: Part = {"type": "reasoning", "text": detail.get("text", "")}
            if detail.get("signature"):
                reasoning["signature"] = detail["signature"]
            out.append(reasoning)
        else:
            skip("redacted reasoning details")
    return out


def _tool(call_id: Any, name: Any, args: Any, state: Any, output: Any, error: Any, denial: str | None,
          skip: Skip) -> list[Part]:
    """A tool call, and its result once the tool ran (or failed, or was denied)."""
    call: Part = {"type": "tool-call", "tool_call_id": call_id, "name": name,
                  "args": {} if args is None else args}
    if state in _DONE and error is None:
        return [call, {"type": "tool-result", "tool_call_id": call_id, "name": name, "output": output}]
    if state in _ERRORS or error is not None:
        text = error if error is not None else denial or "the tool call was denied"
        return [call, {"type": "tool-result", "tool_call_id": call_id, "name": name, "output": text,
                       "is_error": True}]
    if state not in ("input-streaming", "input-available", "partial-call", "call", "approval-requested",
                     "approval-responded", None):
        skip(f"tool-call states {state!r} (kept as a call without a result)")
    return [call]


def _denial(part: Part) -> str | None:
    approval = part.get("approval")
    if isinstance(approval, dict) and approval.get("approved") is False:
        reason = approval.get("reason")
        return f"denied: {reason}" if isinstance(reason, str) and reason else "denied"
    return None


def _file(url: Any, media_type: Any, filename: Any) -> Part:
    part: Part = {"type": "file", "url": url}
    if isinstance(media_type, str) and media_type:
        part["media_type"] = media_type
    if isinstance(filename, str) and filename:
        part["name"] = filename
    return part


def _data_url(data: Any, media_type: Any) -> Any:
    """Mastra's file ``data``: a URL as it is, base64 bytes as a ``data:`` URL."""
    if not isinstance(data, str) or data.startswith("data:") or "://" in data:
        return data
    return f"data:{media_type or 'application/octet-stream'};base64,{data}"


def _other(part: Part, skip: Skip) -> list[Part]:
    kind: str = part["type"]
    fields = {k: v for k, v in part.items() if k not in ("type", "providerMetadata")}
    if kind.startswith("data-"):
        if fields.get("id") is not None:
            skip("ids of data parts")
        return [{"type": "data", "name": kind[len("data-"):], "data": fields.get("data")}]
    if kind in _SOURCES:
        return [{"type": "data", "name": kind, "data": fields}]
    if kind != "step-start":
        skip(f"{kind!r} parts")
    return []


def _provider(part: Part, skip: Skip) -> None:
    if part.get("providerMetadata") or part.get("callProviderMetadata"):
        skip("provider metadata on parts")
