"""Session ids to thread ids: any string the Agents SDK takes as a ``session_id`` names one
memvault thread, and two different session ids never name the same thread.

A memvault id is a non-blank string of at most 256 characters without NUL bytes or lone
surrogates (:func:`memvault.model.check_id`); the SDK's own sessions take any string. The
mapping:

* a session id that is a valid memvault id and does not start with :data:`PREFIX` is the thread
  id as it is (``"chat-1"`` → ``"chat-1"``): every thread made before this mapping stays found;
* any other session id (empty, blank, with NUL or lone surrogates, too long, or starting with
  the prefix) becomes ``PREFIX + "=" + escaped`` where ``%`` is written ``%25``, NUL ``%00`` and
  a lone surrogate ``%uXXXX`` (reversible: :func:`session_id_for` decodes it);
* when that is over 256 characters: ``PREFIX + "#" +`` the SHA-256 of the session id's code
  points (UTF-8 with surrogates passed through), 64 hex digits. Injective up to a SHA-256
  collision; not reversible (the session object keeps its ``session_id``).

No collision: an id kept as it is never starts with the prefix, and an encoded one always does;
the character after the prefix tells the two encoded forms apart; the escape is prefix-free.
"""

from __future__ import annotations

import hashlib
import re

from memvault.model import MAX_ID_LENGTH, check_id

__all__ = ["PREFIX", "session_id_for", "thread_id_for"]

PREFIX = "openai-agents-session:"
"""What every encoded thread id starts with (and no thread id kept as it is)."""

_NEEDS_ESCAPE = re.compile("[%\x00\ud800-\udfff]")
_ESCAPED = re.compile("%(?:25|00|u([0-9a-f]{4}))")


def _escape(char: re.Match[str]) -> str:
    code = ord(char.group(0))
    return "%25" if code == 0x25 else "%00" if code == 0 else f"%u{code:04x}"


def thread_id_for(session_id: str) -> str:
    """The memvault thread id that stores the SDK session ``session_id`` (see the module)."""
    if not session_id.startswith(PREFIX):
        try:
            return check_id(session_id)
        except ValueError:
            pass
    escaped = f"{PREFIX}={_NEEDS_ESCAPE.sub(_escape, session_id)}"
    if len(escaped) <= MAX_ID_LENGTH:
        return escaped
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{PREFIX}#{digest}"


def _unescape(code: re.Match[str]) -> str:
    text = code.group(0)
    return "%" if text == "%25" else "\x00" if text == "%00" else chr(int(code.group(1), 16))


def session_id_for(thread_id: str) -> str | None:
    """The session id whose thread is ``thread_id``: the inverse of :func:`thread_id_for`, or
    ``None`` for a hashed (too long) one, which cannot be decoded."""
    if not thread_id.startswith(PREFIX):
        return thread_id
    rest = thread_id[len(PREFIX):]
    if rest.startswith("="):
        return _ESCAPED.sub(_unescape, rest[1:])
    return None
