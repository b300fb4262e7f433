"""Checks of configuration values (timeouts, sizes, retries) shared by the embedders and the
model clients: a bad value is a :class:`memvault.errors.ConfigurationError` naming its owner."""

from __future__ import annotations

import math

from memvault.errors import ConfigurationError, shown


def positive_int(value: object, name: str, owner: str) -> int:
    """``value`` if it is a positive int, else :class:`memvault.errors.ConfigurationError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigurationError(f"{owner}: {name} must be a positive integer, got {shown(value)}")
    return value


def positive_float(value: object, name: str, owner: str, *, allow_zero: bool = False) -> float:
    """``value`` as a float if it is a finite positive number, else a ConfigurationError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(f"{owner}: {name} must be a number, got {shown(value)}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigurationError(f"{owner}: {name} must be {bound}, got {shown(value)}")
    return float(value)
