"""A server started for ada reaches nothing of bob's, in the same database: bob's thread ids
answer exactly like missing ones, searches and recall never return his messages, and no tool
argument can name another resource."""

from __future__ import annotations

from mcp_helpers import BOB_SECRET, dump, stdio_session, structured, text

from memvault import Memory


async def test_nothing_of_bob_is_reachable_from_ada(db_url: str) -> None:
    async with stdio_session(db_url) as session:
        structured(await session.call_tool("save_message", {"thread_id": "t1", "text": "ada on tea"}))

        threads = structured(await session.call_tool("list_threads", {"limit": 100}))
        assert [t["id"] for t in threads["threads"]] == ["t1"]
        for query in ("zeppelin", "secret plans", BOB_SECRET):
            for tool, args in (("search", {"query": query}), ("recall", {"query": query})):
                result = structured(await session.call_tool(tool, args))
                assert result["hits"] == [], (tool, query)
        assert structured(await session.call_tool("get_working_memory", {}))["content"] is None

        # bob's thread answers like a missing one, word for word
        for tool, args in (("read_thread", {}), ("search", {"query": "zeppelin"}),
                           ("recall", {"query": "zeppelin"}), ("get_working_memory", {}),
                           ("update_working_memory", {"content": "x"})):
            bobs = await session.call_tool(tool, {**args, "thread_id": "bob-t"})
            missing = await session.call_tool(tool, {**args, "thread_id": "no-such"})
            assert bobs.is_error and missing.is_error, tool
            assert text(bobs) == text(missing).replace("no-such", "bob-t"), tool

        # a resource argument is not part of any tool: it cannot widen the scope
        sneaky = await session.call_tool("search", {"query": "zeppelin", "resource_id": "bob"})
        assert "zeppelin noted" not in dump(sneaky) and BOB_SECRET not in dump(sneaky)

        # an id bob also uses is ada's own thread, separate from his
        saved = structured(await session.call_tool("save_message",
                                                   {"thread_id": "shared", "text": "ada here"}))
        assert saved["seq"] == 1
        read = structured(await session.call_tool("read_thread", {"thread_id": "shared"}))
        assert [m["text"] for m in read["messages"]] == ["ada here"]

    async with await Memory.open(db_url) as memory:
        assert [m.text for m in await memory.get_messages(thread_id="shared", resource_id="bob")] == [
            "bob in the shared thread about zeppelin"]
        assert [m.text for m in await memory.get_messages(thread_id="bob-t", resource_id="bob")] == [
            BOB_SECRET, "zeppelin noted"]
        assert await memory.get_working_memory(resource_id="bob") == "Bob likes zeppelins"


async def test_server_for_bob_sees_bob_only(db_url: str) -> None:
    async with stdio_session(db_url, resource="bob") as session:
        threads = structured(await session.call_tool("list_threads", {}))
        assert {t["id"] for t in threads["threads"]} == {"bob-t", "shared"}
        hits = structured(await session.call_tool("search", {"query": "zeppelin"}))["hits"]
        assert {h["message"]["thread_id"] for h in hits} == {"bob-t", "shared"}
