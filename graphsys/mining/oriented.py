"""Deprecated: the oriented view moved to :mod:`graphsys.views.orient` (this name goes in
the next release)."""

import warnings

from graphsys.views.orient import *  # noqa: F403

warnings.warn("graphsys.mining.oriented is graphsys.views.orient now", DeprecationWarning,
              stacklevel=2)
