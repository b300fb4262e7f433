"""Moving and measuring whole stores: :mod:`~memvault.transfer.copier` (store to store, verified
by checksums), :mod:`~memvault.transfer.jsonl` (export and import), :mod:`~memvault.transfer.stats`
(record counts) and :mod:`~memvault.transfer.reserved` (the resource ids memvault keeps for
itself). :class:`memvault.Memory` exposes them; the faces call it, never a store."""
