"""The views' tests take the mining tests' small random graphs."""

from tests.mining.conftest import graph_of  # noqa: F401 (a fixture)
