"""ConversationBuffer: merging steps, pairing results with calls, pending marks, checkpoints,
sub-agents and deterministic ids."""

from __future__ import annotations

import json

import pytest

from memvault import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart, ValidationError
from memvault.runtime import ConversationBuffer, UnknownToolCallError, by_agent, timeline


def call(call_id: str, name: str = "lookup") -> ToolCallPart:
    return ToolCallPart(tool_call_id=call_id, name=name, args={"id": call_id})


def result(call_id: str, output: object = "ok") -> ToolResultPart:
    return ToolResultPart(tool_call_id=call_id, output=output)


def kinds(message: Message) -> list[str]:
    return [p.type for p in message.parts]


def new_buffer(**kwargs: object) -> ConversationBuffer:
    return ConversationBuffer("t1", "ada", **kwargs)  # type: ignore[arg-type]


# merging


def test_consecutive_steps_merge_into_one_message_with_the_first_steps_id() -> None:
    buffer = new_buffer()
    buffer.add_user("hi")
    first = Message.assistant("Let me check.", id="step-1")
    assert buffer.add_step(first) == "step-1"
    assert buffer.add_step(Message(role="assistant", id="step-2", parts=[call("c1")])) == "step-1"
    buffer.add_tool_result(result("c1"))
    assert buffer.add_step(Message.assistant("Done.", id="step-3")) == "step-1"
    user, assistant = buffer.messages
    assert (user.role, assistant.id) == ("user", "step-1")
    assert kinds(assistant) == ["text", "tool-call", "tool-result", "text"]
    assert [p.text for p in assistant.parts if isinstance(p, TextPart)] == ["Let me check.", "Done."]


@pytest.mark.parametrize("closer", ["user", "system", "tool"])
def test_a_user_system_or_tool_message_starts_a_new_assistant_message(closer: str) -> None:
    buffer = new_buffer()
    buffer.append_text("one")
    buffer.add(Message(role=closer, parts=[TextPart(text="between")]))
    buffer.append_text("two")
    assert [m.role for m in buffer.messages] == ["assistant", closer, "assistant"]
    assert [m.text for m in buffer.messages] == ["one", "between", "two"]


def test_seeded_messages_are_never_extended_and_start_turn_closes_the_open_message() -> None:
    buffer = new_buffer(messages=[Message.assistant("old", id="old")])
    buffer.append_text("new")
    assert [m.text for m in buffer.messages] == ["old", "new"]
    buffer.start_turn("turn-2")
    buffer.append_text("newer")
    assert [m.text for m in buffer.messages] == ["old", "new", "newer"]


def test_text_and_reasoning_deltas_extend_the_last_part_of_their_kind() -> None:
    buffer = new_buffer()
    buffer.append_reasoning("think ")
    buffer.append_reasoning("hard", signature="sig")
    buffer.append_text("Hel")
    buffer.append_text("lo")
    buffer.add_tool_call(call("c1"))
    buffer.append_text(" and after")  # text after a call is a new part
    buffer.append_text("wards")
    (message,) = buffer.messages
    assert kinds(message) == ["reasoning", "text", "tool-call", "text"]
    assert message.parts[0] == ReasoningPart(text="think hard", signature="sig")
    assert message.parts[1] == TextPart(text="Hello")
    assert message.parts[3] == TextPart(text=" and afterwards")


def test_bad_deltas_and_steps_are_refused_with_a_typed_error() -> None:
    buffer = new_buffer()
    for bad in ("a\x00b", "\ud800", 42):
        with pytest.raises(ValidationError):
            buffer.append_text(bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        buffer.add_step(Message.user("not an assistant step"))
    with pytest.raises(ValidationError):
        buffer.add_user(Message.assistant("not a user message"))
    with pytest.raises(ValidationError):
        buffer.add_tool_call(result("c1"))  # type: ignore[arg-type]
    assert buffer.messages == [] and not buffer.has_pending


# tool calls and results


def test_a_result_lands_right_after_its_call_in_the_same_message() -> None:
    buffer = new_buffer()
    buffer.append_text("Checking two things. ")
    buffer.add_tool_call(call("c1"))
    buffer.add_tool_call(call("c2"))
    buffer.append_text("While waiting...")
    buffer.add_tool_result(result("c2", 2))
    buffer.add_tool_result(result("c1", 1))
    (message,) = buffer.messages
    assert kinds(message) == ["text", "tool-call", "tool-result", "tool-call", "tool-result", "text"]
    assert [getattr(p, "tool_call_id", None) for p in message.parts] == [None, "c1", "c1", "c2", "c2", None]


def test_a_result_for_a_call_of_an_earlier_message_goes_into_that_message() -> None:
    seeded = Message(role="assistant", id="old", parts=[call("c0")])
    buffer = new_buffer(messages=[seeded, Message.user("approve it", id="u")])
    assert [c.tool_call_id for c in buffer.pending_tool_calls()] == ["c0"]
    assert buffer.add_tool_result(result("c0")) == "old"
    assert kinds(buffer.messages[0]) == ["tool-call", "tool-result"]
    assert buffer.pending_tool_calls() == []
    assert [m.id for m in buffer.drain_pending()] == ["old"]


def test_a_result_for_an_unknown_call_raises_and_changes_nothing() -> None:
    buffer = new_buffer()
    buffer.add_tool_call(call("c1"))
    buffer.drain_pending()
    with pytest.raises(UnknownToolCallError) as raised:
        buffer.add_tool_result(result("nope"))
    assert raised.value.tool_call_id == "nope" and isinstance(raised.value, ValidationError)
    step = Message(role="assistant", parts=[TextPart(text="x"), result("nope")])
    with pytest.raises(UnknownToolCallError):
        buffer.add_step(step)
    assert kinds(buffer.messages[0]) == ["tool-call"] and not buffer.has_pending


def test_a_step_may_carry_calls_and_their_results() -> None:
    buffer = new_buffer()
    buffer.add_step(Message(role="assistant", parts=[call("c1"), result("c1"), TextPart(text="so")]))
    assert kinds(buffer.messages[0]) == ["tool-call", "tool-result", "text"]
    assert buffer.pending_tool_calls() == []


def test_a_call_id_is_unique_in_the_buffer_and_a_second_result_replaces_the_first() -> None:
    buffer = new_buffer()
    buffer.add_tool_call(call("c1"))
    with pytest.raises(ValidationError, match="already"):
        buffer.add_tool_call(call("c1"))
    buffer.add_tool_result(result("c1", "first"))
    buffer.add_tool_result(result("c1", "second"))
    assert [r.output for r in buffer.messages[0].tool_results] == ["second"]


def test_pairing_ten_thousand_parallel_calls() -> None:
    buffer = new_buffer()
    n = 10_000
    for i in range(n):
        buffer.add_tool_call(call(f"c{i}"))
    assert len(buffer.pending_tool_calls()) == n
    for i in reversed(range(n)):  # the worst order for a scan from the front
        buffer.add_tool_result(result(f"c{i}", i))
    (message,) = buffer.messages
    assert len(message.parts) == 2 * n and buffer.pending_tool_calls() == []
    pairs = zip(message.parts[::2], message.parts[1::2], strict=True)
    assert all(isinstance(c, ToolCallPart) and isinstance(r, ToolResultPart)
               and c.tool_call_id == r.tool_call_id == f"c{r.output}" for c, r in pairs)


def test_pending_tool_calls_lists_the_unanswered_ones_in_order() -> None:
    buffer = new_buffer()
    for name in ("a", "b", "c"):
        buffer.add_tool_call(call(name))
    buffer.add_tool_result(result("b"))
    assert [c.tool_call_id for c in buffer.pending_tool_calls()] == ["a", "c"]


# pending marks


def test_drain_returns_each_changed_message_once_in_order_as_copies() -> None:
    history = [Message.user("earlier", id="h1"), Message.assistant("answer", id="h2")]
    buffer = new_buffer(messages=history)
    assert not buffer.has_pending and buffer.drain_pending() == []
    buffer.add_user(Message.user("now", id="u1"))
    buffer.append_text("a", agent_id=None)
    buffer.append_text("b")
    drained = buffer.drain_pending()
    assert [m.id for m in drained] == ["u1", buffer.messages[-1].id]
    assert drained[1].text == "ab"
    assert buffer.drain_pending() == [] and len(buffer.messages) == 4
    drained[1].parts.append(TextPart(text="mutated"))  # a deep copy: the buffer is unaffected
    drained[0].parts[0].text = "changed"  # type: ignore[union-attr]
    assert buffer.messages[-1].text == "ab" and buffer.messages[2].text == "now"
    buffer.append_text("c")
    assert [m.text for m in buffer.drain_pending()] == ["abc"]


def test_adding_a_known_id_replaces_that_message_in_place() -> None:
    buffer = new_buffer(messages=[Message.user("draft", id="u1"), Message.assistant("x", id="a1")])
    buffer.add_user(Message.user("final", id="u1"))
    assert [(m.id, m.text) for m in buffer.messages] == [("u1", "final"), ("a1", "x")]
    assert [m.id for m in buffer.drain_pending()] == ["u1"]


# checkpoints


def test_checkpoint_restore_round_trip_through_json() -> None:
    buffer = new_buffer(messages=[Message.user("earlier", id="h1")], turn_id="turn-9")
    buffer.add_user("question")
    buffer.append_reasoning("hmm")
    buffer.add_tool_call(call("c1"))
    buffer.add_tool_call(call("c2"), agent_id="helper", agent_name="Helper")
    buffer.add_tool_result(result("c1"))
    buffer.drain_pending()
    buffer.append_text("still streaming", agent_id="helper")
    data = json.loads(json.dumps(buffer.checkpoint()))
    restored = ConversationBuffer.restore(data)
    assert restored.messages == buffer.messages
    assert [c.tool_call_id for c in restored.pending_tool_calls()] == ["c2"]
    assert [m.id for m in restored.drain_pending()] == [m.id for m in buffer.drain_pending()]
    restored.append_text(" more", agent_id="helper")  # the open message is open again
    restored.add_tool_result(result("c2"))
    restored.append_text("main again")
    assert [m.id for m in restored.messages] == ["h1", "turn-9-u0", "turn-9-a0", "turn-9-a1", "turn-9-a2"]
    assert restored.messages[3].text == "still streaming more"
    assert kinds(restored.messages[3]) == ["tool-call", "tool-result", "text"]


def test_restore_refuses_malformed_checkpoints() -> None:
    good = new_buffer().checkpoint()
    for bad in ({}, {**good, "version": 99}, {**good, "pending": ["ghost"]},
                {**good, "messages": [{"role": "robot"}]}, {**good, "open": ["ghost", None]}):
        with pytest.raises(ValidationError):
            ConversationBuffer.restore(bad)


# sub-agents


def test_sub_agent_output_is_tagged_and_never_merges_with_another_agent() -> None:
    buffer = new_buffer()
    buffer.add_user("plan my trip")
    buffer.append_text("Delegating. ")
    buffer.add_tool_call(call("d1", "delegate"))
    buffer.append_text("Searching. ", agent_id="researcher", agent_name="Researcher")
    buffer.add_step(Message.assistant("Found it."), agent_id="researcher")
    buffer.add_tool_result(result("d1", "found"))
    buffer.append_text("Here it is.")
    user, main, sub, main_again = buffer.messages
    assert sub.metadata == {"agent_id": "researcher", "agent_name": "Researcher"}
    assert [p.type for p in sub.parts] == ["text", "text"]
    assert main.metadata == {} and main_again.metadata == {}
    assert kinds(main) == ["text", "tool-call", "tool-result"]
    assert [a for a, _ in timeline(buffer.messages)] == [None, None, "researcher", None]
    grouped = by_agent(buffer.messages)
    assert [m.id for m in grouped["researcher"]] == [sub.id]
    assert [m.id for m in grouped[None]] == [user.id, main.id, main_again.id]


def test_timeline_orders_stored_messages_by_seq() -> None:
    a = Message.assistant("a", seq=2, metadata={"agent_id": "x"})
    b = Message.user("b", seq=1)
    assert [(agent, m.text) for agent, m in timeline([a, b])] == [(None, "b"), ("x", "a")]
    unsaved = Message.assistant("c")
    assert [m.text for _, m in timeline([a, b, unsaved])] == ["a", "b", "c"]  # as given


# deterministic ids and retries


def test_a_turn_names_its_messages_from_the_turn_id() -> None:
    buffer = new_buffer(turn_id="t7")
    buffer.add_user("q")
    buffer.append_text("a")
    buffer.append_text("b", agent_id="sub")
    buffer.add_step(Message.assistant("c", id="ignored"))
    buffer.add_user("q2")
    assert [m.id for m in buffer.messages] == ["t7-u0", "t7-a0", "t7-a1", "t7-a2", "t7-u1"]
    assert all(m.metadata["turn_id"] == "t7" for m in buffer.messages)


def test_resuming_a_turn_continues_its_ids() -> None:
    first = new_buffer(turn_id="t7")
    first.add_user("q")
    first.append_text("a")
    resumed = new_buffer(messages=first.messages, turn_id="t7")
    resumed.append_text("b")
    assert [m.id for m in resumed.messages] == ["t7-u0", "t7-a0", "t7-a1"]


def test_a_retry_drops_the_failed_attempt_and_reports_what_it_does_not_redo() -> None:
    failed = new_buffer(messages=[Message.user("before", id="h")], turn_id="t7")
    failed.add_user("q")
    failed.append_text("partial")
    failed.append_text("sub", agent_id="sub")
    retry = new_buffer(messages=failed.messages, turn_id="t7", retry=True)
    assert [m.id for m in retry.messages] == ["h"]
    assert retry.stale_ids() == ["t7-u0", "t7-a0", "t7-a1"]
    retry.add_user("q")
    retry.append_text("complete answer")
    assert [m.id for m in retry.messages] == ["h", "t7-u0", "t7-a0"]
    assert retry.stale_ids() == ["t7-a1"]
    retry.forget_stale()
    assert retry.stale_ids() == []
