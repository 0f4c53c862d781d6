"""The version of graphsys, in a module of its own: the package's metadata
(``pyproject.toml`` reads it) and every module that records it (a manifest's
``created_by``) import it from here, never from ``graphsys`` itself."""

__version__ = "0.1.0"
