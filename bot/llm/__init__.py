"""The model adapters, the only code that speaks to a model SDK: gemini.py (google-genai) and
openai_compat/ (`openai`, any OpenAI-compatible endpoint), each implementing the engine's model ports
(`bot/memory/model_ports.py`), and what they share: retry.py (the one retry loop, failures -> the ports'
errors), schedule.py and pace.py (turns and deadlines at one endpoint), usage.py (counters) and
answers.py (reading JSON answers and vectors); and providers.py, a record per provider (its name, keys,
default models, extraction mode, distance cuts, how its client opens) that the settings, the composition
root, `check`, the admin log and stats read. The chat that uses them is `bot/chat/`."""
