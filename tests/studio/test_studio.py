"""The Studio end to end: ``memvault studio`` over a seeded SQLite file, driven in headless
Debian Chromium (the reading features of issue 17 are in ``test_studio_reading``, changes in
``test_studio_changes``, the docs' screenshots in ``test_studio_screenshots``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from memvault import MemoryOptions, WorkingMemoryOptions

from .conftest import CHROMIUM, WORKING_MEMORY, XSS, Studio, Watched

expect: Any = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is absent: install Debian's chromium package to run the Studio tests",
)


def open_studio(watched: Watched, studio: Studio, resource: str = "alice") -> Any:
    """Open the URL ``memvault studio`` printed and pick ``resource`` as the admin."""
    page = watched.page
    page.goto(studio.url)
    expect(page.locator("#studio")).to_be_visible()
    expect(page.locator("#resource-select option")).not_to_have_count(0)
    page.select_option("#resource-select", resource)
    count = studio.seeded.counts[resource]["threads"]
    expect(page.locator("#threads button.thread")).to_have_count(min(count, 20))
    expect(page.locator('[data-stat="threads"] dd')).to_have_text(str(count))
    return page


def open_thread(page: Any, thread_id: str) -> None:
    page.locator(f'#threads button[data-thread-id="{thread_id}"]').click()
    expect(page.locator(f'#threads button[data-thread-id="{thread_id}"]')).to_have_attribute(
        "aria-current", "true")
    expect(page.locator("#timeline > li").first).to_be_visible()


def test_the_key_leaves_the_address_bar(watched: Watched, studio: Studio) -> None:
    page = watched.page
    page.goto(studio.url)
    expect(page.locator("#studio")).to_be_visible()
    assert "key=" not in page.url
    assert page.evaluate("sessionStorage.getItem('memvault.studio.key')") == studio.key
    expect(page.locator("#who")).to_contain_text("admin")
    page.reload()  # the key survives a reload of the tab
    expect(page.locator("#studio")).to_be_visible()


def test_pick_a_resource_and_see_its_stats(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio, "bob")
    expect(page.locator('[data-stat="messages"] dd')).to_have_text("2")
    expect(page.locator("#threads")).to_contain_text("Bob's garden")
    expect(page.locator("#threads")).not_to_contain_text("Trip to Lisbon")
    page.select_option("#resource-select", "alice")
    alice = studio.seeded.counts["alice"]
    expect(page.locator('[data-stat="threads"] dd')).to_have_text(str(alice["threads"]))
    expect(page.locator('[data-stat="messages"] dd')).to_have_text(str(alice["messages"]))
    expect(page.locator("#threads")).to_contain_text("Trip to Lisbon")
    expect(page.locator("#threads")).not_to_contain_text("Bob's garden")
    assert all(url.startswith(studio.base) for url in watched.requests), watched.requests
    assert not watched.errors


def test_a_thread_timeline_pairs_tool_calls_and_folds_reasoning(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio)
    open_thread(page, studio.seeded.trip_thread)
    messages = page.locator("#timeline li.message")
    expect(messages).to_have_count(4)
    assert [messages.nth(i).get_attribute("data-role") for i in range(4)] == [
        "user", "assistant", "user", "assistant"]
    expect(messages.nth(0)).to_contain_text("What's the weather like then?")
    expect(messages.nth(0).locator("time")).to_have_text("2026-05-02 09:00 UTC")

    call = messages.nth(1).locator(".tool-call")
    expect(call).to_have_count(1)
    expect(call).to_contain_text("get_weather")
    expect(call.locator(".tool-args")).to_contain_text('"city": "Lisbon"')
    expect(call.locator(".tool-result")).to_contain_text('"avg_high_c": 22')  # the result, inside its call
    expect(messages.nth(1)).to_contain_text("about 22 °C")

    reasoning = messages.nth(1).locator("details.reasoning")
    expect(reasoning).not_to_have_attribute("open", re.compile(".*"))
    expect(reasoning.locator("p")).to_be_hidden()
    reasoning.locator("summary").click()
    expect(reasoning).to_have_attribute("open", "")
    expect(reasoning.locator("p")).to_be_visible()
    expect(reasoning.locator("p")).to_contain_text("look the climate up with the tool")


def test_edit_the_working_memory(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio)
    textarea = page.locator("#wm-text")
    expect(textarea).to_have_value(WORKING_MEMORY)
    edited = WORKING_MEMORY + "- Travel: Lisbon, May 2026\n"
    textarea.fill(edited)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#wm-status")).to_contain_text("Saved")
    assert studio.memory_call("get_working_memory", resource_id="alice") == edited
    assert studio.memory_call("get_working_memory", resource_id="bob") is None
    page.reload()
    expect(page.locator("#wm-text")).to_have_value(edited)


def test_a_thread_has_its_own_working_memory(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio)
    open_thread(page, studio.seeded.trip_thread)
    page.get_by_label("the open thread's").check()
    expect(page.locator("#wm-label")).to_contain_text("Trip to Lisbon")
    expect(page.locator("#wm-text")).to_have_value("")
    page.locator("#wm-text").fill("Trip: Lisbon, 2-9 May")
    page.locator("#wm-text").press("Tab")
    page.keyboard.press("Enter")  # the Save button, reached by keyboard
    expect(page.locator("#wm-status")).to_contain_text("Saved")
    per_thread = MemoryOptions(working_memory=WorkingMemoryOptions(scope="thread"))
    assert studio.memory_call("get_working_memory", options=per_thread, resource_id="alice",
                              thread_id=studio.seeded.trip_thread) == "Trip: Lisbon, 2-9 May"
    assert studio.memory_call("get_working_memory", resource_id="alice").startswith("# User")
    page.get_by_label("the resource's").check()
    expect(page.locator("#wm-text")).to_have_value(re.compile(r"^# User"))


def test_recall_shows_hits_with_scores_and_sources(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio)
    page.get_by_role("tab", name="Recall").click()
    page.get_by_label("Query").fill("green tea")
    page.get_by_label("Query").press("Enter")
    hits = page.locator("#recall-hits li.hit")
    expect(hits.first).to_be_visible()
    expect(page.locator("#recall-status")).to_contain_text("hit")
    first = hits.first
    assert re.fullmatch(r"\d+\.\d{3}", first.locator(".score").inner_text()), first.inner_text()
    sources = first.locator(".source").all_inner_texts()
    assert sources and set(sources) <= {"lexical", "vector", "both"}, sources
    expect(page.locator("#recall-hits")).to_contain_text("green tea")
    expect(first.locator("time")).to_have_text(re.compile(r"2026-05-02 \d\d:\d\d UTC"))
    expect(first.locator(".hit-thread")).to_have_text("Trip to Lisbon")
    first.get_by_role("button", name="Open").click()  # the hit's thread opens at its message
    expect(page.locator("#timeline-title")).to_contain_text("Trip to Lisbon")
    expect(page.locator("#timeline li.message")).to_have_count(4)
    opened = first.get_by_role("button", name="Open").get_attribute("data-message-id")
    expect(page.locator("#timeline li.message.highlight")).to_have_attribute("data-message-id", opened)
    # recalled as this thread's next turn: its recent messages (all four) are not hits
    page.get_by_label("from the open thread").check()
    page.get_by_role("button", name="Recall", exact=True).click()
    expect(page.locator("#recall-status")).to_have_text("No hits.")
    expect(hits).to_have_count(0)


def test_user_content_is_shown_as_text_and_never_run(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio)
    expect(page.locator("#threads")).to_contain_text(XSS)
    open_thread(page, studio.seeded.xss_thread)
    expect(page.locator("#timeline li.message").first).to_contain_text(f"Please store this exactly: {XSS}")
    expect(page.locator("#timeline-title")).to_contain_text(XSS)
    page.get_by_role("tab", name="Recall").click()
    page.get_by_label("Query").fill("store exactly")
    page.get_by_role("button", name="Recall", exact=True).click()
    expect(page.locator("#recall-hits")).to_contain_text(XSS)
    assert page.locator("img").count() == 0
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0
    assert watched.dialogs == []
    assert not any(url.endswith("/x") for url in watched.requests), watched.requests
    assert not watched.errors


def test_a_bad_key_shows_an_error_and_the_key_box(watched: Watched, studio: Studio) -> None:
    page = watched.page
    page.goto(f"{studio.base}/studio/#key=not-a-real-key")
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error")).to_contain_text("refused")
    expect(page.locator("#key-form")).to_be_visible()
    expect(page.locator("#studio")).to_be_hidden()
    page.get_by_label("API key").fill(studio.key)  # the key box, by keyboard
    page.get_by_label("API key").press("Enter")
    expect(page.locator("#studio")).to_be_visible()
    expect(page.locator("#error")).to_be_hidden()


def test_threads_page_through_next_cursor_and_delete(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio, "carol")
    more = page.get_by_role("button", name="More threads")
    expect(more).to_be_visible()
    more.click()
    expect(page.locator("#threads button.thread")).to_have_count(22)
    expect(more).to_be_hidden()
    open_thread(page, "carol-05")
    expect(page.locator("#timeline")).to_contain_text("no messages")
    page.get_by_role("button", name="Delete thread").click()  # dismissed: nothing happens
    assert watched.dialogs and "Chat 05" in watched.dialogs[-1]
    expect(page.locator("#threads button.thread")).to_have_count(22)
    watched.accept_dialogs = True
    page.get_by_role("button", name="Delete thread").click()
    expect(page.locator('[data-stat="threads"] dd')).to_have_text("21")
    expect(page.locator("#threads-count")).to_have_text("21 threads")
    expect(page.locator('#threads button[data-thread-id="carol-05"]')).to_have_count(0)
    expect(page.locator("#timeline-hint")).to_be_visible()
    assert studio.memory_call("get_thread", resource_id="carol", thread_id="carol-05") is None
    studio.seeded.counts["carol"]["threads"] = 21

    # a thread deleted elsewhere meanwhile: the API's error is shown in the page
    assert studio.memory_call("delete_thread", resource_id="carol", thread_id="carol-07")
    page.locator('#threads button[data-thread-id="carol-07"]').click()
    expect(page.locator("#error")).to_contain_text("no such thread")
    expect(page.locator("#studio")).to_be_visible()
    studio.seeded.counts["carol"]["threads"] = 20


def test_a_resource_key_sees_its_resource_and_a_revoked_key_is_refused(
    watched: Watched, studio: Studio
) -> None:
    created = json.loads(studio.cli("keys", "create", "--resource", "bob", "--name", "bob's app", "--json"))
    page = watched.page
    page.goto(f"{studio.base}/studio/#key={created['key']}")
    expect(page.locator("#studio")).to_be_visible()
    expect(page.locator("#who")).to_contain_text("resource bob")
    expect(page.locator("#resource-picker")).to_be_hidden()
    expect(page.locator('[data-stat="threads"] dd')).to_have_text("1")
    expect(page.locator("#threads")).to_contain_text("Bob's garden")

    studio.cli("keys", "revoke", created["key_id"])
    page.get_by_role("tab", name="Recall").click()
    page.get_by_label("Query").fill("tomatoes")
    page.get_by_role("button", name="Recall", exact=True).click()
    expect(page.locator("#error")).to_contain_text("revoked")
    expect(page.locator("#key-form")).to_be_visible()
    expect(page.locator("#studio")).to_be_hidden()
    assert page.evaluate("sessionStorage.getItem('memvault.studio.key')") is None
