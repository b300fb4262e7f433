"""How long the Studio takes, in headless Debian Chromium, to open dave's 1,200-message thread at
its newest message and to load each older page of 200 (up to all 1,200 loaded): medians over
five rounds, printed as JSON. Not collected by the test run; run it by its path::

    PYTHONPATH=src pytest tests/studio/bench_studio_paging.py -q -s
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import pytest

from .conftest import CHROMIUM, LONG, Studio

expect: Any = pytest.importorskip("playwright.sync_api").expect
PAGE = 200
ROUNDS = 5


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent")
def test_paging_timings(browser: Any, studio: Studio) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(studio.url)
        opens: list[float] = []
        olders: list[float] = []
        for _ in range(ROUNDS):
            page.select_option("#resource-select", "alice")
            expect(page.locator("#timeline-hint")).to_be_visible()
            page.select_option("#resource-select", "dave")
            expect(page.locator("#threads button.thread")).to_have_count(1)
            start = time.perf_counter()
            page.locator("#threads button.thread").click()
            expect(page.locator(f'li[data-message-id="d{LONG:04d}"]')).to_be_visible()
            opens.append(time.perf_counter() - start)
            for loaded in range(2 * PAGE, LONG + 1, PAGE):
                start = time.perf_counter()
                page.locator("#timeline-older").click()
                expect(page.locator("#timeline li.message")).to_have_count(loaded)
                olders.append(time.perf_counter() - start)
        print(json.dumps({
            "thread_messages": LONG, "page": PAGE, "rounds": ROUNDS,
            "open_at_newest_ms_median": round(statistics.median(opens) * 1000),
            "load_older_page_ms_median": round(statistics.median(olders) * 1000),
            "load_older_page_ms_max": round(max(olders) * 1000),
        }))
    finally:
        context.close()
