"""`python -m bot web`: a dashboard signed in with Discord, its own process on the engine's use cases.

sessions.py (the signed session cookie and its CSRF token), discord_sign_in.py (Discord's OAuth2 code
flow), pages.py (the Starlette app: the member's pages, security headers), server.py (opening memory,
serving it with uvicorn); templates/ and static/ ship with the package (no CDN, no inline script).
"""
