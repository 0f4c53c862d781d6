"""Temporary files beside the file they will become, named with the writing process's id,
so that those of a killed writer are recognised and removed by the next one: the storage
layer's and the kernel cache's (which loads before the storage layer) alike."""

from __future__ import annotations

import glob
import os
import secrets
import shutil
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (on this machine: a temporary name of another's is
    judged by the pid it holds)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def temp_beside(out: Path, mark: str = ".tmp-") -> Path:
    """A fresh temporary path ``.NAME{mark}PID-HEX`` beside ``out`` (holding this pid),
    after removing those of dead processes (a killed writer's temp file or staging
    directory), so that crashes do not pile them up."""
    prefix = f".{out.name}{mark}"
    for stale in out.parent.glob(glob.escape(prefix) + "*"):
        pid = stale.name[len(prefix):].split("-")[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            if stale.is_dir() and not stale.is_symlink():
                shutil.rmtree(stale, ignore_errors=True)
            else:
                stale.unlink(missing_ok=True)
    return out.parent / f"{prefix}{os.getpid()}-{secrets.token_hex(4)}"
