"""The Gemini client (the only code that speaks to google-genai), and the chat: its prompts, its tool
rounds and the reply use case that Discord and the terminal share."""
