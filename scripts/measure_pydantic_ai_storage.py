"""What a Pydantic AI history costs in memvault: the bytes one 100,000-character prompt and
answer take as memvault rows (the JSON view stored once) beside Pydantic AI's own JSON and beside
storing the texts twice, and the median time of a to_memvault + to_pydantic_ai round trip.
Prints JSON: ``python scripts/measure_pydantic_ai_storage.py`` (needs the pydantic-ai extra)."""

from __future__ import annotations

import json
import statistics
import time

from pydantic_ai import messages as pm

from memvault.integrations.pydantic_ai import to_memvault, to_pydantic_ai

text = "word " * 20_000  # 100,000 characters
msgs = [pm.ModelRequest(parts=[pm.UserPromptPart(text)]), pm.ModelResponse(parts=[pm.TextPart(text)])]
own = len(pm.ModelMessagesTypeAdapter.dump_json(msgs))
ours = [to_memvault(m) for m in msgs]
stored = sum(len(m.parts_json().encode()) + len(json.dumps(m.metadata).encode()) for m in ours)
naive = stored + sum(len(t.encode()) for t in [text, text])
times = []
for _ in range(21):
    t0 = time.perf_counter()
    to_pydantic_ai([to_memvault(m) for m in msgs])
    times.append(time.perf_counter() - t0)
print(
    json.dumps(
        {
            "pydantic_ai_own_json_bytes": own,
            "memvault_row_bytes": stored,
            "without_stored_once_bytes": naive,
            "round_trip_ms_median": round(statistics.median(times) * 1000, 2),
        }
    )
)
