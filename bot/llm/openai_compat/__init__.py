"""The only package that speaks to the `openai` library: any OpenAI-compatible endpoint (OpenAI,
OpenRouter, Ollama, LM Studio, vLLM, a llama.cpp server) for structured JSON, streamed chat and embeddings.

Endpoints differ in what they honour, so each feature has a way down rather than an error for people:
- JSON answers ask for the response schema (`json_schema`); an endpoint refusing it (a 400 naming
  `response_format`) is asked for JSON mode with the schema (`json_object` with `schema`, which
  llama-cpp-python's server turns into a grammar), then for JSON mode, then for the schema in the
  instruction. Every answer is validated, and one that does not fit gets one repair request (the bad
  answer and what is wrong with it); an endpoint that ignores `response_format` (or the schema beside
  JSON mode) from then on gets the schema in the instruction too.
- A JSON call given a check on its partial answer (`stop_early`) is streamed and closed as soon as the
  check gives a reason: a small model counting every line stops there, not at its token budget.
- Tools and images are offered until the endpoint refuses them (a 400 naming tools or images; or the
  settings switch them off): the request goes again without them, the log says so once, and the chat
  goes on without them (`features` says what holds, for `check --online`). A tool call a small model
  writes as text is read as the call.
- Embeddings come at the model's own size; `dimensions=` is sent only when EMBEDDING_DIMENSIONS asks for
  fewer than the model gives.

features (what the endpoint takes: the JSON-mode ladder, the ways down) and messages (turns to messages,
a reply's chunks back) <- responses (a JSON answer read, whole or streamed); they and written_calls
(calls written as text) <- client (`OpenAICompatClient`, on the shared retry loop).
"""

from bot.llm.openai_compat.client import OpenAICompatClient
from bot.llm.providers import endpoint_name

__all__ = ["OpenAICompatClient", "endpoint_name"]
