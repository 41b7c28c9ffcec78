"""`python -m bot`: see bot/cli.py for the commands."""

from bot.cli import main

raise SystemExit(main())
