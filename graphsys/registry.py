"""One small generic registry for every plug-in point of graphsys.

Configs hold a string key (``"complex_diagonal"``), never a class; the registry turns the key
into the class and an unknown key into an error that lists the known ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to classes. ``register_as(name)`` is a class decorator."""

    def __init__(self, kind: str):
        self.kind = kind
        self._classes: dict[str, type[T]] = {}

    def register_as(self, name: str) -> Callable[[type[T]], type[T]]:
        def decorator(cls: type[T]) -> type[T]:
            old = self._classes.get(name)
            if old is not None and old is not cls:
                raise ValueError(f"{self.kind} {name!r} is already registered to {old.__name__}")
            self._classes[name] = cls
            cls.name = name  # type: ignore[attr-defined]
            return cls
        return decorator

    def get_class(self, name: str) -> type[T]:
        try:
            return self._classes[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r} (known: {', '.join(self.names())})") \
                from None

    def names(self) -> list[str]:
        return sorted(self._classes)

    def __contains__(self, name: object) -> bool:
        return name in self._classes
