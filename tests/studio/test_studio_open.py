"""``memvault studio --open``: the browser is launched without the key on its command line
(readable by any local user through ``ps``); the page trades a one-time token for the key on
loopback, and the token works once."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import Opened

expect: Any = pytest.importorskip("playwright.sync_api").expect


def test_the_browser_command_line_holds_no_key(opened: Opened) -> None:
    key = opened.url.split("#key=", 1)[1]
    line = " ".join(opened.browser_argv)
    assert opened.browser_argv[1].startswith(f"{opened.base}/studio/#handoff=")
    assert key not in line and "key=" not in line and "mv_" not in line


def test_the_page_trades_the_token_for_the_key_once(browser: Any, opened: Opened) -> None:
    key = opened.url.split("#key=", 1)[1]
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(opened.browser_argv[1])
        expect(page.locator("#studio")).to_be_visible()
        expect(page.locator("#who")).to_contain_text("admin")
        assert "handoff=" not in page.url
        assert page.evaluate("sessionStorage.getItem('memvault.studio.key')") == key
    finally:
        context.close()
    token = opened.browser_argv[1].split("#handoff=", 1)[1]
    again = httpx.post(f"{opened.base}/studio/handoff", json={"token": token}, trust_env=False)
    assert again.status_code == 401 and key not in again.text
    wrong = httpx.post(f"{opened.base}/studio/handoff", json={"token": "x" * 43}, trust_env=False)
    assert wrong.status_code == 401
