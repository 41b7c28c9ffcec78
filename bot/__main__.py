"""`python -m bot`: see bot/cli/ for the commands."""

from bot.cli import main

raise SystemExit(main())
