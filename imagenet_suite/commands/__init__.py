"""One module per top-level CLI command; each defines ``register(subparsers)``."""
