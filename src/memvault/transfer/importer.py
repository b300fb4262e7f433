"""``memvault import --from SYSTEM:PATH``: another system's memory database into a store.

:func:`read_source` reads the whole source (:mod:`~memvault.transfer.voltagent` or
:mod:`~memvault.transfer.mastra`) before anything is written; :func:`import_source` then writes it
with :func:`~memvault.transfer.seeds.write_seed` (idempotent, merging by the source's ids).
:meth:`memvault.Memory.import_from` is the public call.
"""

from __future__ import annotations

from memvault.stores.capabilities import CompleteStore
from memvault.transfer import mastra, voltagent
from memvault.transfer.seeds import ImportReport, Progress, Seed, split_source, write_seed


def read_source(source: str) -> tuple[ImportReport, Seed]:
    """An empty report and the seed read from ``source`` (``voltagent:PATH``, ``mastra:PATH``,
    each also with a ``file:`` URL). A bad source is a :class:`~memvault.errors.ValidationError`;
    a file that is not that system's database a :class:`~memvault.errors.StoreOpenError`."""
    system, path = split_source(source)
    seed = voltagent.read(path) if system == "voltagent" else mastra.read(path)
    return ImportReport(system=system, source=str(path)), seed


async def import_source(
    store: CompleteStore, source: str, *, progress: Progress | None = None
) -> ImportReport:
    """Import ``source`` into ``store``; returns what was carried and what was not."""
    report, seed = read_source(source)
    return await write_seed(store, seed, report, progress)
