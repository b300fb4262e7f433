"""Resource ids memvault keeps its own records under: not users' data.

:data:`KEYS_RESOURCE` holds the HTTP API's key records (:mod:`memvault.server.keys`). The HTTP
API refuses it wherever a resource is named and hides it from ``/v1/resources``; ``memvault
stats`` leaves it out unless asked for it by name; export and copy leave it out unless asked
(``--include-keys``, ``include_keys=True``): key records are not users' data. Deleting a
resource (:meth:`memvault.Memory.delete_resource`) deletes the key records naming it
(:data:`KEY_OWNER`), so its keys stop working.
"""

from __future__ import annotations

KEYS_RESOURCE = "memvault:api-keys"
"""The reserved resource id holding the API key records."""
RESERVED_RESOURCES = frozenset({KEYS_RESOURCE})
KEY_OWNER = "resource_id"
"""The field of a key record (a state value of :data:`KEYS_RESOURCE`) naming the key's resource."""
MAX_KEYS = 10_000
"""How many key records a store holds at most."""
