"""The Gemini client (the only code that speaks to google-genai) and the chat's prompts."""
