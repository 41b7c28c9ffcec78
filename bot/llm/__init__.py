"""The Gemini wrapper (the only code that speaks to google-genai) and the prompts the memory engine uses."""

from bot.llm.gemini import (
    ChatTurn,
    Embedder,
    GeminiClient,
    GeminiError,
    GeminiRefusal,
    Purpose,
    Usage,
)

__all__ = [
    "ChatTurn",
    "Embedder",
    "GeminiClient",
    "GeminiError",
    "GeminiRefusal",
    "Purpose",
    "Usage",
]
