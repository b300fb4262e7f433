"""Thread titles: a short title made from a thread's first user message by one small model call.

The turn helper asks for one in the background when a thread has no title yet; it never blocks
the turn and never touches working memory. A failing model leaves the thread untitled.
"""

from __future__ import annotations

import re

from memvault.llm.base import Model

MAX_TITLE_CHARS = 80
TITLE_INSTRUCTIONS = (
    "Write a short title, at most six words, for a conversation that starts with the user's "
    "message below. Answer with the title only: no quotes, no trailing period."
)
_PREFIX = re.compile(r"^\s*(title\s*:\s*)", re.IGNORECASE)
_QUOTES = "\"'`*#\u201c\u201d\u2018\u2019"  # straight and curly quotes, markdown marks


def clean_title(text: str, max_chars: int = MAX_TITLE_CHARS) -> str | None:
    """The model's answer as a title: its first non-empty line without a ``Title:`` prefix,
    quotes or markdown marks, and a trailing period; cut at a word boundary (with "…") to at
    most ``max_chars`` characters. ``None`` when nothing is left."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = _PREFIX.sub("", line).strip().strip(_QUOTES).strip().rstrip(".").strip()
    line = " ".join(line.split())
    if not line:
        return None
    if len(line) > max_chars:
        cut = line[: max_chars - 1]
        if " " in cut:
            cut = cut[: cut.rindex(" ")]
        line = cut.rstrip(" ,;:-") + "…"
    return line


async def make_title(model: Model, first_message: str, *, max_chars: int = MAX_TITLE_CHARS) -> str | None:
    """A title for a thread that starts with ``first_message`` (``None`` when the model gave
    nothing usable). The message is cut to its first 2,000 characters for the call."""
    response = await model.complete(
        [{"role": "system", "content": TITLE_INSTRUCTIONS},
         {"role": "user", "content": first_message[:2000]}],
        max_tokens=30,
    )
    return clean_title(response.text, max_chars)
