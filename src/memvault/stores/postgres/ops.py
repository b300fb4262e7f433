"""Operation ids: a write that is run again after its ``COMMIT``'s answer was lost applies once.

A working-memory update (an append runs a function on the current content) and a state write
(the version grows by one) would apply twice if run again after a first run that committed.
Each call of those gets a fresh operation id (:func:`new_op_id`), kept for all its runs
(:meth:`~.db.Database.write_idempotent`). Its transaction first *claims* the id, inserting it
into ``applied_ops`` (schema migration 6):

- the insert succeeds: this is the first run to commit, if it commits; the write is applied and
  what the caller needs is recorded with the id (a state write's new version), in the same
  transaction;
- the id is there: an earlier run committed; nothing is applied and the recorded outcome is
  returned (:func:`claim`). An earlier run still in flight on the server (its client gone) holds
  the id's row: the insert waits for it to commit or roll back, so two runs never both apply.

Ids are random (no user data) and are pruned after :data:`KEEP_FOR` (a run is repeated within
seconds), at most :data:`PRUNE_BATCH` at a time and once per :data:`PRUNE_EVERY` per store, by
a write that claims an id (an index on ``applied_us`` keeps that cheap).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from memvault.model import now
from memvault.stores.common import to_micros
from memvault.stores.postgres.db import Conn

KEEP_FOR = timedelta(days=1)
"""How long an operation id is kept: a run repeated later than this would apply again."""
PRUNE_EVERY = 60.0
"""Seconds between two prunings by one store."""
PRUNE_BATCH = 1_000


def new_op_id() -> str:
    """A fresh operation id (random, 128 bits)."""
    return uuid.uuid4().hex


@dataclass
class Op:
    """One call's operation id, and whether its run should prune old ids."""

    id: str = field(default_factory=new_op_id)
    prune: bool = False


@dataclass
class Pruning:
    """When a store last pruned (monotonic seconds): :meth:`op` asks for a pruning when due."""

    last: float = field(default=-PRUNE_EVERY)

    def op(self) -> Op:
        """A new :class:`Op`, asked to prune if :data:`PRUNE_EVERY` seconds have passed."""
        clock = time.monotonic()
        due = clock - self.last >= PRUNE_EVERY
        if due:
            self.last = clock
        return Op(prune=due)


async def claim(conn: Conn, op: Op) -> tuple[bool, int | None]:
    """Claim ``op``'s id in this transaction: ``(True, None)`` when no run has committed it yet
    (apply the write, then :func:`record`), else ``(False, recorded version)``."""
    if op.prune:
        await conn.execute(
            "DELETE FROM applied_ops WHERE op_id IN (SELECT op_id FROM applied_ops"
            " WHERE applied_us < %s ORDER BY applied_us LIMIT %s)",
            (to_micros(now() - KEEP_FOR), PRUNE_BATCH),
        )
    cursor = await conn.execute(
        "INSERT INTO applied_ops (op_id, applied_us) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (op.id, to_micros(now())),
    )
    if cursor.rowcount:
        return True, None
    cursor = await conn.execute("SELECT version FROM applied_ops WHERE op_id = %s", (op.id,))
    row = await cursor.fetchone()
    return False, None if row is None or row[0] is None else int(row[0])


async def record(conn: Conn, op: Op, version: int | None) -> None:
    """Keep ``version`` (a state write's new version; ``None``: not written) with ``op``'s id."""
    if version is not None:
        await conn.execute("UPDATE applied_ops SET version = %s WHERE op_id = %s", (version, op.id))
