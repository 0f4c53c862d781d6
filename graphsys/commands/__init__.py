"""CLI sub-commands; each module has ``register(subparsers)`` (see :mod:`graphsys.cli`)."""
