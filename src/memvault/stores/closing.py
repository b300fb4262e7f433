"""Closed means closed: every call on a closed store (or Memory) raises
:class:`~memvault.errors.StoreClosedError` at once.

:func:`refuses_when_closed` is a class decorator. It wraps every public method the class itself
defines (coroutine or plain function; not ``close``, not the names in ``allow``, nothing starting
with ``_``) so that a call made once ``self.closed`` is true raises
:class:`~memvault.errors.StoreClosedError` before the method runs: nothing is read or written and
nothing waits. A coroutine that was running when the store closed and then fails with a
:class:`~memvault.errors.StoreError` (a pooled connection closed under it) raises
:class:`~memvault.errors.StoreClosedError` too. A method added to the class later is covered
without further work. ``close`` itself stays callable, so closing twice is harmless; the class
sets ``closed`` in its ``close``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from memvault.errors import StoreClosedError, StoreError

C = TypeVar("C", bound=type)


def refuses_when_closed(*allow: str) -> Callable[[C], C]:
    """The decorator (see the module docstring); ``allow``: more method names left unwrapped
    (harmless after close, e.g. a flush that has nothing left to do)."""
    exempt = {"close", *allow}

    def decorate(cls: C) -> C:
        for name, value in list(vars(cls).items()):
            if name.startswith("_") or name in exempt or not inspect.isfunction(value):
                continue
            setattr(cls, name, _guarded(value))
        return cls

    return decorate


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def call_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            if self.closed:
                raise StoreClosedError()
            try:
                return await method(self, *args, **kwargs)
            except StoreError as exc:  # e.g. a connection pool closed under the call
                if self.closed and not isinstance(exc, StoreClosedError):
                    raise StoreClosedError(f"this store was closed while the call ran ({exc})") from exc
                raise

        return call_async

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.closed:
            raise StoreClosedError()
        return method(self, *args, **kwargs)

    return call
