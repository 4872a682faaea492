"""``python -m sentiment``: serve until SIGTERM, then drain."""

from .server import main

main()
