"""The Studio as a porter reads with it (issue 17 point 6), in headless Debian Chromium over
``memvault studio``: a 1,200-message thread opens at its newest message, pages back keeping the
reader's place, jumps to the latest; the columns scroll on their own; search and recall hits open
their message; tool results sit under their call; hostile text stays inert; the favicon is served."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import CHROMIUM, EMOJI, HOSTILE_TEXT, HOSTILE_TITLE, LONG, RTL, XSS, Studio, Watched
from .test_studio import open_studio, open_thread

expect: Any = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is absent: install Debian's chromium package to run the Studio tests",
)
PAGE = 200  # the Studio's page of messages


def box(page: Any, selector: str) -> dict[str, float]:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, f"{selector} is not shown"
    return dict(found)


def in_view(page: Any, selector: str, within: str = "#timeline-scroll") -> bool:
    """Whether ``selector`` is fully inside the visible part of ``within``."""
    inner, outer = box(page, selector), box(page, within)
    return inner["y"] >= outer["y"] - 1 and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1


def has_class(name: str) -> re.Pattern[str]:
    return re.compile(rf"(^|\s){name}(\s|$)")


def message(n: int) -> str:
    return f'#timeline li.message[data-message-id="d{n:04d}"]'


def test_a_long_thread_opens_at_its_newest_message(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio, "dave")
    open_thread(page, "dave-long")
    messages = page.locator("#timeline li.message")
    expect(messages).to_have_count(PAGE)
    expect(messages.first).to_have_attribute("data-message-id", f"d{LONG - PAGE + 1:04d}")
    expect(page.locator(message(LONG))).to_contain_text(f"line {LONG}")
    assert in_view(page, message(LONG)), "the newest message is not in view when the thread opens"
    expect(page.locator("#jump-latest")).to_be_hidden()

    page.locator("#timeline-scroll").evaluate("node => { node.scrollTop = 0; }")
    expect(page.locator("#jump-latest")).to_be_visible()
    assert not in_view(page, message(LONG))
    page.locator("#jump-latest").click()
    expect(page.locator("#jump-latest")).to_be_hidden()
    assert in_view(page, message(LONG))


def test_load_older_keeps_the_reader_in_place(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio, "dave")
    open_thread(page, "dave-long")
    scroller = page.locator("#timeline-scroll")
    scroller.evaluate("node => { node.scrollTop = 0; }")
    first = LONG - PAGE + 1
    before = box(page, message(first))["y"]
    page.get_by_role("button", name="Load older messages").click()
    expect(page.locator("#timeline li.message")).to_have_count(2 * PAGE)
    # the message that was at the top is still where the reader left it, older ones above it
    assert abs(box(page, message(first))["y"] - before) <= 2, (before, box(page, message(first)))
    assert scroller.evaluate("node => node.scrollTop") > 1000
    assert in_view(page, message(first))
    for loaded in range(3 * PAGE, LONG + 1, PAGE):
        scroller.evaluate("node => { node.scrollTop = 0; }")
        page.get_by_role("button", name="Load older messages").click()
        expect(page.locator("#timeline li.message")).to_have_count(loaded)
    expect(page.locator("#timeline li.message").first).to_contain_text("line 1")
    expect(page.get_by_role("button", name="Load older messages")).to_have_count(0)
    seqs = page.locator("#timeline li.message .seq").all_inner_texts()
    assert seqs == [f"#{n}" for n in range(1, LONG + 1)]


def test_the_columns_scroll_on_their_own(browser: Any, studio: Studio) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(studio.url)
        page.select_option("#resource-select", "dave")
        open_thread(page, "dave-long")
        expect(page.locator(message(LONG))).to_be_visible()
        # the page itself does not scroll: the header and the three columns fill the window
        assert page.evaluate("document.scrollingElement.scrollHeight <= window.innerHeight + 1")
        threads, timeline, side = box(page, "#left"), box(page, ".timeline-panel"), box(page, "#side")
        for column in (threads, timeline, side):
            assert column["y"] + column["height"] <= 801, column
        assert timeline["width"] >= 640, f"the timeline is {timeline['width']} of 1280 px"
        # scrolling the timeline moves neither the thread list nor the side panel
        page.locator("#timeline-scroll").evaluate("node => { node.scrollTop = 0; }")
        page.mouse.move(timeline["x"] + 100, timeline["y"] + 200)
        page.mouse.wheel(0, 3000)
        assert box(page, "#left") == threads and box(page, "#side") == side
        assert box(page, "#threads button.thread") == box(page, "#threads button.thread")
        assert page.locator("#timeline-scroll").evaluate("node => node.scrollTop") > 0
        assert box(page, "#wm-text")["y"] < 800
        # the side panel hides to widen the timeline, and comes back
        page.get_by_role("button", name="Hide side panel").click()
        expect(page.locator("#side")).to_be_hidden()
        assert box(page, ".timeline-panel")["width"] >= 950
        page.get_by_role("button", name="Show side panel").click()
        expect(page.locator("#side")).to_be_visible()
    finally:
        context.close()


def test_a_search_hit_opens_its_thread_at_the_message(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio, "dave")
    page.get_by_role("tab", name="Search").click()
    page.get_by_label("Words").fill("701")
    page.get_by_role("button", name="Search", exact=True).click()
    hit = page.locator("#search-hits li.hit").first
    expect(hit).to_contain_text("line 701")
    hit.get_by_role("button", name="Open").click()
    target = page.locator(message(701))
    expect(target).to_have_class(has_class("highlight"))
    expect(page.locator("#timeline li.message.highlight")).to_have_count(1)
    assert in_view(page, message(701))
    expect(page.locator("#timeline-title")).to_contain_text("A long chat")
    expect(page.locator("#timeline li.message")).to_have_count(PAGE + 1)  # its page: 100 each side
    expect(page.locator(message(601))).to_have_count(1)
    expect(page.locator(message(801))).to_have_count(1)
    # newer messages are a page away: load them, or jump to the latest
    page.get_by_role("button", name="Load newer messages").click()
    expect(page.locator("#timeline li.message")).to_have_count(2 * PAGE + 1)
    assert in_view(page, message(701)) or box(page, message(701))["y"] < box(page, "#timeline-scroll")["y"]
    expect(page.locator("#jump-latest")).to_be_visible()
    page.locator("#jump-latest").click()
    expect(page.locator(message(LONG))).to_be_visible()
    assert in_view(page, message(LONG))
    expect(page.locator("#timeline li.message.highlight")).to_have_count(0)


def test_a_recall_hit_opens_its_message_loaded_or_not(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio, "dave")
    open_thread(page, "dave-long")  # the newest page: message 42 is not loaded
    expect(page.locator(message(42))).to_have_count(0)
    page.get_by_role("tab", name="Recall").click()
    page.get_by_label("Query").fill("line 42")
    page.get_by_role("button", name="Recall", exact=True).click()
    hit = page.locator("#recall-hits li.hit", has_text="line 42").first
    expect(hit).to_be_visible()
    hit.get_by_role("button", name="Open").click()
    expect(page.locator(message(42))).to_have_class(has_class("highlight"))
    assert in_view(page, message(42))
    # its page: the 41 before it (all there are) and 100 after it, then more to load
    expect(page.locator("#timeline li.message")).to_have_count(41 + 1 + PAGE // 2)
    expect(page.get_by_role("button", name="Load older messages")).to_have_count(0)
    expect(page.get_by_role("button", name="Load newer messages")).to_be_visible()

    # a hit already loaded: the timeline scrolls to it and moves the highlight, loading nothing
    page.locator("#timeline-scroll").evaluate("node => { node.scrollTop = 0; }")
    count = page.locator("#timeline li.message").count()
    requests = len(watched.requests)
    page.get_by_label("Query").fill("line 120")
    page.get_by_role("button", name="Recall", exact=True).click()
    page.locator("#recall-hits li.hit", has_text="line 120").first.get_by_role("button", name="Open").click()
    expect(page.locator(message(120))).to_have_class(has_class("highlight"))
    expect(page.locator(message(42))).not_to_have_class(has_class("highlight"))
    assert in_view(page, message(120))
    assert page.locator("#timeline li.message").count() == count
    assert not [url for url in watched.requests[requests:] if "/messages" in url]


def test_a_thread_named_like_a_route_opens_from_a_hit(watched: Watched, studio: Studio) -> None:
    """``GET /v1/threads/count`` counts threads: the page still reads the thread whose id is
    "count" (sent as ``%63ount``)."""
    page = open_studio(watched, studio, "frank")
    page.get_by_role("tab", name="Search").click()
    page.get_by_label("Words").fill("harbour")
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator("#search-hits li.hit").first.get_by_role("button", name="Open").click()
    expect(page.locator('#timeline li.message[data-message-id="f1"]')).to_have_class(has_class("highlight"))
    expect(page.locator("#timeline-title")).to_have_text("Timeline: A thread named count")
    page.get_by_role("button", name="Rename").click()
    page.get_by_label("New title").fill("Harbour questions")
    page.get_by_label("New title").press("Enter")
    expect(page.locator("#timeline-title")).to_have_text("Timeline: Harbour questions")
    renamed = studio.memory_call("get_thread", resource_id="frank", thread_id="count")
    assert renamed.title == "Harbour questions"


def test_tool_results_stored_in_a_tool_message_sit_under_their_call(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio, "erin")
    open_thread(page, "erin-tools")
    messages = page.locator("#timeline li.message")
    expect(messages).to_have_count(3)
    call = messages.nth(0).locator(".tool-call")
    expect(call.locator(".tool-result")).to_contain_text('"sky": "clear"')
    tool = page.locator('#timeline li.message[data-message-id="e-result"]')
    expect(tool).to_have_class(has_class("compact"))
    expect(tool).to_contain_text("Result of get_weather shown under its call in #1")
    for text in messages.all_inner_texts():  # no empty card
        body = [line for line in text.splitlines() if line.strip()]
        assert len(body) >= 2, text


def test_a_call_and_its_result_across_a_page_edge_pair_up_when_both_are_loaded(
    watched: Watched, studio: Studio
) -> None:
    page = open_studio(watched, studio, "gina")
    open_thread(page, "split")
    result = page.locator('#timeline li.message[data-message-id="g051"]')
    expect(result.locator(".tool-call.orphan")).to_contain_text('"found": "the edge"')  # its call not loaded
    page.locator("#timeline-scroll").evaluate("node => { node.scrollTop = 0; }")
    page.get_by_role("button", name="Load older messages").click()
    expect(page.locator("#timeline li.message")).to_have_count(250)
    call = page.locator('#timeline li.message[data-message-id="g050"] .tool-call')
    expect(call.locator(".tool-result")).to_contain_text('"found": "the edge"')
    expect(result).to_have_class(has_class("compact"))
    expect(result).to_contain_text("Result of lookup shown under its call in #50")
    seqs = page.locator("#timeline li.message .seq").all_inner_texts()
    assert seqs == [f"#{n}" for n in range(1, 251)]


def test_hostile_text_is_shown_as_text(watched: Watched, studio: Studio) -> None:
    page = open_studio(watched, studio)
    title = page.locator('#threads button[data-thread-id="hostile"] .thread-title')
    expect(title).to_have_text(HOSTILE_TITLE)
    open_thread(page, "hostile")
    text = page.locator('#timeline li.message[data-message-id="hostile-1"] p.text')
    expect(text).to_have_text(HOSTILE_TEXT)
    expect(page.locator('#threads button[data-thread-id="hostile"] .thread-preview')).to_contain_text(EMOJI)
    # right-to-left text is isolated: it cannot reorder the page's own words around it
    assert text.evaluate("node => getComputedStyle(node).unicodeBidi") in {"plaintext", "isolate"}
    assert title.evaluate("node => getComputedStyle(node).unicodeBidi") == "isolate"
    assert RTL in page.locator("#timeline-title").inner_text()
    assert page.evaluate("window.pwned") is None
    assert page.locator("#timeline script, #threads script, #timeline img, #threads img").count() == 0
    # a lone surrogate is text the API refuses: the page says so, and keeps working
    page.get_by_role("tab", name="Recall").click()
    page.locator("#recall-query").evaluate("node => { node.value = 'tea \\uD800'; }")
    page.get_by_role("button", name="Recall", exact=True).click()
    expect(page.locator("#error")).to_contain_text("Recall failed")
    page.get_by_label("Query").fill(EMOJI)
    page.get_by_role("button", name="Recall", exact=True).click()
    expect(page.locator("#error")).to_be_hidden()
    expect(page.locator("#recall-status")).to_have_text(re.compile(r"hit|No hits"))
    assert watched.dialogs == []


def test_the_favicon_is_served(watched: Watched, studio: Studio) -> None:
    for path in ("/favicon.ico", "/studio/favicon.svg"):
        answer = httpx.get(f"{studio.base}{path}", timeout=10, trust_env=False)
        assert answer.status_code == 200, path
        assert answer.headers["content-type"].startswith("image/svg+xml"), answer.headers
        assert answer.text.startswith("<svg")
    script = httpx.get(f"{studio.base}/studio/studio.js", timeout=10, trust_env=False)
    assert script.headers["content-type"].startswith("text/javascript")  # a module needs a JS type
    page = open_studio(watched, studio)
    assert page.locator('link[rel="icon"]').get_attribute("href") == "favicon.svg"


HOSTILE_BITS = st.sampled_from([XSS, "<script>window.pwned = 1</script>", "\u202e", "\u200f", "&amp;", "🧠",
                                "\r\n", "\t", "<!--", "]]>", "javascript:alert(1)"])
TEXTS = st.lists(st.one_of(st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                                   max_size=30), HOSTILE_BITS), min_size=1, max_size=4).map("".join)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=TEXTS, texts=st.lists(TEXTS, min_size=1, max_size=4))
def test_any_text_is_shown_exactly(watched: Watched, studio: Studio, title: str, texts: list[str]) -> None:
    """Whatever a title or message holds (any Unicode the API accepts), the page shows exactly
    those characters as text, and nothing in it runs."""
    thread_id = f"fuzz-{uuid.uuid4().hex[:8]}"
    headers = {"Authorization": f"Bearer {studio.key}", "X-Memvault-Resource": "fuzz"}
    created = httpx.post(f"{studio.base}/v1/threads", headers=headers, trust_env=False, timeout=10,
                         json={"id": thread_id, "title": title})
    assert created.status_code == 201, created.text
    messages = [{"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": text}]}
                for i, text in enumerate(texts)]
    saved = httpx.post(f"{studio.base}/v1/threads/{thread_id}/messages", headers=headers, trust_env=False,
                       timeout=10, json={"messages": messages})
    assert saved.status_code == 201, saved.text
    page = watched.page
    page.goto(f"{studio.base}/studio/#key={studio.key}")
    page.select_option("#resource-select", "fuzz")
    button = page.locator(f'#threads button[data-thread-id="{thread_id}"]')
    expect(button.locator(".thread-preview")).not_to_be_empty()
    assert button.locator(".thread-title").evaluate("node => node.textContent") == (title or thread_id)
    button.click()
    shown = page.locator("#timeline li.message p.text")
    expect(shown).to_have_count(len(texts))
    assert shown.evaluate_all("nodes => nodes.map((node) => node.textContent)") == texts
    assert page.evaluate("window.pwned") is None
    assert watched.dialogs == []
