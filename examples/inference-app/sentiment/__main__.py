"""``python -m sentiment``: serve until SIGTERM, then drain."""

from .server import main

# Guarded: the model worker is started with "spawn", which imports the parent's main module again.
if __name__ == "__main__":
    main()
