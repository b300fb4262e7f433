"""A LlamaIndex chat engine whose memory lives in memvault: run
``python examples/llama_index_chat_store.py [sqlite:///path.db]`` (needs
``pip install 'memvault[llama-index]'``; nothing leaves this machine).

The LLM is LlamaIndex's ``MockLLM`` (it echoes part of its prompt); the chat history goes
through LlamaIndex's own ``ChatMemoryBuffer`` into a memvault thread, where a second buffer
(as another process would) reads it back and memvault's search finds it.
"""

from __future__ import annotations

import sys

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer

from memvault.integrations.llama_index import MemvaultChatStore
from memvault.sync import Memory


def main(url: str) -> None:
    with Memory.open(url) as memory:
        store = MemvaultChatStore(memory=memory, resource_id="ada")
        buffer = ChatMemoryBuffer.from_defaults(
            chat_store=store,
            chat_store_key="chat-1",
            tokenizer_fn=str.split,  # offline token count
        )
        engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=5), memory=buffer)
        for prompt in ("Hi, I'm Ada and I like green tea.", "What do I like?"):
            engine.chat(prompt)
        again = ChatMemoryBuffer.from_defaults(
            chat_store=store, chat_store_key="chat-1", tokenizer_fn=str.split
        )
        print("messages:", len(again.get_all()))
        print("keys:", store.get_keys())
        hits = memory.search_messages(resource_id="ada", query="green tea")
        print("found:", hits[0].message.text)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///llama_index_example.db")
