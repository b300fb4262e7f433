"""The docs' screenshots of the Studio, taken in headless Debian Chromium at 1280 x 800 (the size
the issue measured). Saved only when ``MEMVAULT_STUDIO_SCREENSHOTS`` names a folder::

    MEMVAULT_STUDIO_SCREENSHOTS=docs/images pytest tests/studio/test_studio_screenshots.py -q

Without it, the same views are still driven and checked (the page shows what the shot shows)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import CHROMIUM, Studio
from .test_studio import open_thread
from .test_studio_changes import call

expect: Any = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is absent: install Debian's chromium package to run the Studio tests",
)


@pytest.fixture
def page(browser: Any, studio: Studio) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        opened = context.new_page()
        opened.set_default_timeout(10_000)
        opened.goto(studio.url)
        expect(opened.locator("#studio")).to_be_visible()
        yield opened
    finally:
        context.close()


def shoot(page: Any, name: str) -> None:
    folder = os.environ.get("MEMVAULT_STUDIO_SCREENSHOTS")
    if not folder:
        return
    path = Path(folder) / f"studio-{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000


def test_shot_a_thread_with_a_tool_call_and_recall(page: Any, studio: Studio) -> None:
    page.select_option("#resource-select", "alice")
    open_thread(page, studio.seeded.trip_thread)
    page.locator("#timeline details.reasoning summary").first.click()
    page.get_by_role("tab", name="Recall").click()
    page.get_by_label("Query").fill("green tea")
    page.get_by_role("button", name="Recall", exact=True).click()
    expect(page.locator("#recall-hits li.hit").first).to_be_visible()
    expect(page.locator("#threads .thread-preview").first).not_to_be_empty()
    page.locator("#recall-query").blur()
    shoot(page, "thread")


def test_shot_a_search_hit_opened_in_a_long_thread(page: Any, studio: Studio) -> None:
    page.select_option("#resource-select", "dave")
    expect(page.locator("#threads button.thread")).to_have_count(1)
    page.get_by_role("tab", name="Search").click()
    page.get_by_label("Words").fill("701")
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator("#search-hits li.hit").first.get_by_role("button", name="Open").click()
    expect(page.locator("#timeline li.message.highlight")).to_contain_text("line 701")
    page.locator("#search-query").blur()
    shoot(page, "search-hit")


def test_shot_filtered_threads_and_states(page: Any, studio: Studio) -> None:
    if call(studio, "GET", "/v1/states", "erin").status_code == 200:  # a server with the state queries
        for key, status, step in (("booking-42", "suspended", 2), ("booking-41", "done", 5)):
            body = {"value": {"step": step, "awaiting": "payment" if status == "suspended" else None},
                    "status": status, "workflow_id": "wf-booking", "thread_id": "erin-tools"}
            assert call(studio, "PUT", f"/v1/states/{key}", "erin", body).status_code == 200
    page.select_option("#resource-select", "erin")
    filtering = page.locator("#thread-filter")
    expect(page.locator("#threads button.thread")).to_have_count(3)
    if filtering.is_visible():  # a server with the thread queries
        page.locator("#filter-more summary").click()
        page.get_by_label("Metadata equals (a JSON object)").fill('{"project": "travel"}')
        expect(page.locator("#threads button.thread")).to_have_count(2)
        expect(page.locator("#threads-count")).to_have_text("2 of 3 threads")
    open_thread(page, "erin-tools")
    moved = page.locator('#timeline li.message[data-message-id="e-result"]')
    expect(moved).to_contain_text("shown under its call")
    states = page.get_by_role("tab", name="States")
    if states.is_visible():  # a server with the state queries
        states.click()
        expect(page.locator("#states li.state")).to_have_count(2)
        page.locator("#states li.state summary").first.click()
    page.locator("#filter-metadata").blur()
    shoot(page, "filters")
