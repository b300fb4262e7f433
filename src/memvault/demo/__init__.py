"""The offline demo face: :func:`offline_model`, the deterministic stand-in model that
``memvault demo`` and ``memvault chat --offline`` use, and :mod:`memvault.demo.run`, the demo's
two conversations."""

from memvault.demo.offline_model import offline_model

__all__ = ["offline_model"]
