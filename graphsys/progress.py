"""Progress of long loops: a tqdm bar on a terminal, a plain line every N seconds elsewhere.

:func:`progress_bar` takes tqdm's arguments (``total``, ``unit``, ``desc``, ``disable``,
...). When stderr is a terminal it is a tqdm bar; when it is not (``nohup``, CI, a batch
scheduler, a pipe) it is a :class:`LineProgress`: one line, at most every
:func:`interval` seconds (``GRAPHSYS_PROGRESS_SECONDS``, default 10), with the work done
and the total, the share, the rate and the time left (``epoch 1/5: 1.2M/8.0M edge (15%),
412k edge/s, elapsed 00:03, ETA 00:16``). A loop shorter than the interval prints nothing,
so short runs stay silent; ``disable=True`` (the commands' ``--quiet``) prints nothing at
all.

Examples
--------
>>> import io
>>> from graphsys.progress import LineProgress, progress_bar
>>> log = io.StringIO()  # not a terminal
>>> with progress_bar(total=3, unit="batch", desc="train", file=log) as bar:
...     for _ in range(3):
...         bar.update(1)
>>> isinstance(bar, LineProgress), bar.n, log.getvalue()  # shorter than the interval
(True, 3, '')
"""

from __future__ import annotations

import os
import sys
import time

from tqdm import tqdm

from graphsys.errors import GraphsysError

__all__ = ["DEFAULT_SECONDS", "ENV", "LineProgress", "interval", "progress_bar"]

#: Environment variable: seconds between two progress lines when stderr is not a terminal.
ENV = "GRAPHSYS_PROGRESS_SECONDS"
#: Seconds between two progress lines by default.
DEFAULT_SECONDS = 10.0
#: The line: done/total, share, rate, elapsed and remaining time.
LINE_FORMAT = ("{desc}: {n_fmt}/{total_fmt} {unit} ({percentage:.0f}%), {rate_fmt}, "
               "elapsed {elapsed}, ETA {remaining}{postfix}")
#: The same without a total (the work is open-ended).
OPEN_FORMAT = "{desc}: {n_fmt} {unit}, {rate_fmt}, elapsed {elapsed}{postfix}"


def interval() -> float:
    """Seconds between two progress lines: ``GRAPHSYS_PROGRESS_SECONDS`` (a positive
    number) or :data:`DEFAULT_SECONDS`.

    Raises
    ------
    GraphsysError
        The variable is set to something other than a positive number.
    """
    text = os.environ.get(ENV, "").strip()
    if not text:
        return DEFAULT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise GraphsysError(f"{ENV}={text!r}: expected a positive number of seconds")
    return value


class LineProgress(tqdm):
    """A tqdm that writes a whole line (no carriage return, no bar) at most every
    ``every`` seconds (default :func:`interval`), and a last line when it closes if it
    wrote any: for logs, where a redrawn bar is unreadable."""

    def __init__(self, *args, every: float | None = None, **kwargs) -> None:
        self._every = interval() if every is None else float(every)
        self._last_line = None
        self._lines = 0
        kwargs.setdefault("file", sys.stderr)
        kwargs["mininterval"] = self._every
        kwargs["maxinterval"] = self._every
        kwargs["dynamic_ncols"] = False
        kwargs.pop("ncols", None)
        super().__init__(*args, **kwargs)
        self._last_line = self.start_t if hasattr(self, "start_t") else time.time()

    def display(self, msg=None, pos=None) -> bool:
        if self.disable or self._last_line is None:
            return True
        now = self._time()
        closing = getattr(self, "_closing", False)
        if closing and not self._lines:
            return True  # a run shorter than the interval stays silent
        if not closing and now - self._last_line < self._every:
            return True
        d = self.format_dict
        d["bar_format"] = LINE_FORMAT if d.get("total") else OPEN_FORMAT
        line = self.format_meter(**d)
        self.fp.write(line.strip() + "\n")
        self.fp.flush()
        self._last_line = now
        self._lines += 1
        return True

    def close(self) -> None:
        """The last line (if any was written), without tqdm's trailing newline."""
        if self.disable:
            return
        self._closing = True
        self.display()
        self.disable = True
        with self._lock:
            self._decr_instances(self)


def progress_bar(*args, **kwargs) -> tqdm:
    """A progress bar with tqdm's arguments: a tqdm bar when stderr is a terminal, else a
    :class:`LineProgress` (a line every :func:`interval` seconds). ``disable=True``: no
    output.

    Returns
    -------
    tqdm
        Use it as tqdm (``update``, ``set_description``, ``set_postfix``, ``close``, as a
        context manager).
    """
    if kwargs.get("disable"):
        return tqdm(*args, **kwargs)
    file = kwargs.get("file") or sys.stderr
    try:
        tty = file.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tqdm(*args, **kwargs) if tty else LineProgress(*args, **kwargs)
