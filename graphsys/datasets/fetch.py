"""Get a dataset's files into the local cache, verified by sha256.

For each ``[[files]]`` entry: a **cache** file ``<cache>/<path>`` (or the derived
``<cache>/<download.path>``) with the registry size and sha256 is used as is (size compared
first, digest recomputed each time); else a **mirror** file ``<mirror>/<path>``
(``--mirror`` / ``GRAPHSYS_MIRROR``) is copied, its size checked first; else
``download.url`` is fetched with :mod:`urllib` (once per URL per call), unpacked (gzip, or
one member of a tar/zip read as a stream: never ``extractall``, links and directories
refused), stripped of its header if the entry says so and verified against
``download.sha256``. Every file is written to a temporary name in its final directory and
renamed only after its digest matched; a mismatch is one line naming the file and both
digests. The cache is ``--cache``, else ``GRAPHSYS_DATA``, else
``~/.cache/graphsys/datasets``.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import secrets
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from graphsys.datasets.registry import DataFile, Dataset
from graphsys.errors import GraphsysError, InputError
from graphsys.storage.atomic import sha256_file
from graphsys.temp_files import pid_alive, temp_beside

ENV_CACHE = "GRAPHSYS_DATA"
ENV_MIRROR = "GRAPHSYS_MIRROR"
DEFAULT_CACHE = Path("~/.cache/graphsys/datasets")
#: Bytes per read while copying, hashing or downloading (1 MiB).
CHUNK = 1 << 20
#: Seconds to wait for the server before a download fails.
HTTP_TIMEOUT = 60
#: Seconds a whole download may take (however slowly the server trickles bytes).
DOWNLOAD_DEADLINE = 1800
#: A download may be at most this many times the expected size of the files it holds, plus
#: :data:`DOWNLOAD_SLACK_BYTES` (archives hold other members, compression may not pay).
DOWNLOAD_SLACK_FACTOR = 2
DOWNLOAD_SLACK_BYTES = 1 << 20


@dataclass(frozen=True)
class FetchedFile:
    """One file in the cache: where it lies, where it came from and its verified sha256.

    ``derived`` is True when the file is the unpacked/stripped download form
    (``download.path``) rather than the mirror form (``path``).
    """

    name: str
    path: Path
    source: str  # "cache", "mirror" or "download"
    sha256: str
    bytes: int
    derived: bool


@dataclass(frozen=True)
class FetchResult:
    """The verified files of one dataset, by ``[[files]]`` name."""

    dataset: Dataset
    cache_dir: Path
    files: dict[str, FetchedFile]

    def path(self, name: str) -> Path:
        """Local path of the file called ``name``."""
        return self.files[name].path

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset.name,
            "cache": str(self.cache_dir),
            "files": {n: {"path": str(f.path), "source": f.source, "sha256": f.sha256,
                          "bytes": f.bytes} for n, f in self.files.items()},
        }


def cache_dir(option: str | Path | None = None) -> Path:
    """The cache directory: ``option``, else ``GRAPHSYS_DATA``, else ``~/.cache/...``."""
    value = option if option is not None else os.environ.get(ENV_CACHE) or DEFAULT_CACHE
    return Path(value).expanduser()


def mirror_dir(option: str | Path | None = None) -> Path | None:
    """The mirror directory: ``option``, else ``GRAPHSYS_MIRROR``, else None (download)."""
    value = option if option is not None else os.environ.get(ENV_MIRROR)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise GraphsysError(f"mirror {path}: not a directory")
    return path


def fetch(dataset: Dataset, *, cache: str | Path | None = None,
          mirror: str | Path | None = None, log: Callable[[str], None] | None = None
          ) -> FetchResult:
    """Make every file of a dataset present in the cache, verified by sha256.

    A file already in the cache is used when its digest matches; otherwise it is copied
    from the mirror, or, without a mirror, downloaded from the publisher (unpacked and
    stripped as the registry entry says). Files are renamed into place only after their
    digest matched, so a failed fetch leaves no partial file.

    Parameters
    ----------
    dataset : Dataset
        A registry entry (:func:`~graphsys.datasets.registry.get_dataset`).
    cache : str or path-like, optional
        Cache directory (default :func:`cache_dir`).
    mirror : str or path-like, optional
        Local mirror directory (default :func:`mirror_dir`); without one, files missing
        from the cache are downloaded.
    log : callable, optional
        Called with one line per file obtained from the mirror or a download.

    Returns
    -------
    FetchResult
        The verified local files by ``[[files]]`` name.

    Raises
    ------
    GraphsysError
        A digest mismatch (naming the file and both digests), a missing mirror file or a
        failed download.

    Examples
    --------
    >>> import tempfile
    >>> from graphsys.datasets import get_dataset
    >>> from graphsys.datasets.fetch import fetch
    >>> fetched = fetch(get_dataset("cora"), cache=tempfile.mkdtemp())  # doctest: +SKIP
    >>> sorted(fetched.files)[:2]  # doctest: +SKIP
    ['cites', 'content']
    """
    root = cache_dir(cache)
    mirror_root = mirror_dir(mirror)
    log = log or (lambda line: None)
    out: dict[str, FetchedFile] = {}
    missing: list[DataFile] = []
    for f in dataset.files:
        hit = _cached(root, f)
        if hit is not None:
            out[f.name] = hit
        else:
            missing.append(f)
    if mirror_root is not None:
        for f in missing:
            out[f.name] = _from_mirror(root, mirror_root, f)
            log(f"{f.path}: copied from mirror {mirror_root}")
    else:
        by_url: dict[str, list[DataFile]] = {}
        for f in missing:
            by_url.setdefault(f.download.url, []).append(f)
        for url, files in by_url.items():
            log(f"downloading {url}")
            for fetched in _from_url(root, url, files):
                out[fetched.name] = fetched
                log(f"{fetched.path.relative_to(root)}: verified")
    return FetchResult(dataset, root, {f.name: out[f.name] for f in dataset.files})


# -- sources -----------------------------------------------------------------------------------

def _cached(root: Path, f: DataFile) -> FetchedFile | None:
    for rel, digest, derived in ((f.path, f.sha256, False),
                                 (f.download.path, f.download.sha256, True)):
        path = root / rel
        size = f.download.bytes if derived else f.bytes
        # the size first: a stale or foreign file of another size is not hashed
        if path.is_file() and path.stat().st_size == size and sha256_file(path) == digest:
            return FetchedFile(f.name, path, "cache", digest, size, derived)
    return None


def _from_mirror(root: Path, mirror: Path, f: DataFile) -> FetchedFile:
    src = mirror / f.path
    if not src.is_file():
        raise InputError(f"not in the mirror (expected {f.path} of dataset file {f.name!r})",
                         path=src)
    size = src.stat().st_size
    if size != f.bytes:   # refused before a byte is copied (a wrong or foreign file)
        raise GraphsysError(f"size mismatch for {f.path} (from {src}): expected {f.bytes:,} "
                            f"bytes, got {size:,} (not copied)")
    with open(src, "rb") as fh:
        dest = _write_verified(root / f.path, _chunks(fh), f.sha256,
                               what=f"{f.path} (from {src})", limit=f.bytes)
    return FetchedFile(f.name, dest, "mirror", f.sha256, dest.stat().st_size, False)


def _from_url(root: Path, url: str, files: list[DataFile]) -> list[FetchedFile]:
    """Download ``url`` once into the cache's temporary area, derive every file from it."""
    tmp_dir = root / ".downloads"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    for stale in tmp_dir.glob("*.part"):  # of a download killed before its cleanup
        pid = stale.name.split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            stale.unlink(missing_ok=True)
    artifact = tmp_dir / f"{os.getpid()}-{secrets.token_hex(8)}.part"
    limit = DOWNLOAD_SLACK_FACTOR * sum(f.download.bytes for f in files) + DOWNLOAD_SLACK_BYTES
    out = []
    try:
        _download(url, artifact, limit=limit)
        for f in files:
            d = f.download
            with _Payload(artifact, f, url) as stream:
                chunks = _strip_header(stream, d.strip) if d.strip != "none" else _chunks(stream)
                dest = _write_verified(root / d.path, chunks, d.sha256,
                                       what=f"{d.path} (from {_describe(f)})", limit=d.bytes)
            out.append(FetchedFile(f.name, dest, "download", d.sha256, dest.stat().st_size,
                                   True))
        return out
    finally:
        artifact.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            tmp_dir.rmdir()  # only when empty: another fetch may be using it


def _describe(f: DataFile) -> str:
    d = f.download
    return d.url + (f" member {d.member}" if d.member else "")


def _download(url: str, dest: Path, *, limit: int | None = None,
              deadline: float | None = None) -> None:
    """Stream ``url`` into ``dest``: at most ``limit`` bytes and ``deadline`` seconds in all
    (each read also times out after :data:`HTTP_TIMEOUT`). Too large, too slow, HTTP and
    network failures are one-line errors."""
    from graphsys._version import __version__

    request = urllib.request.Request(url, headers={"User-Agent": f"graphsys/{__version__}"})
    deadline = DOWNLOAD_DEADLINE if deadline is None else deadline
    end = time.monotonic() + deadline
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as resp, \
                open(dest, "wb") as out:
            size = resp.headers.get("Content-Length")
            if limit is not None and size and size.isdigit() and int(size) > limit:
                raise GraphsysError(f"download of {url} refused: {int(size):,} bytes announced"
                                    f", at most {limit:,} expected")
            got = 0
            while block := resp.read1(CHUNK):  # returns what arrived: no stall on one chunk
                got += len(block)
                if limit is not None and got > limit:
                    raise GraphsysError(f"download of {url} stopped: more than {limit:,} bytes"
                                        f", the most expected")
                if time.monotonic() > end:
                    raise GraphsysError(f"download of {url} stopped: not done after "
                                        f"{deadline:.0f} s ({got:,} bytes)")
                out.write(block)
    except urllib.error.HTTPError as exc:
        raise GraphsysError(f"download of {url} failed: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise GraphsysError(f"download of {url} failed: {reason}") from None


class _Payload:
    """Context manager yielding a binary stream of the wanted bytes of a downloaded artifact."""

    def __init__(self, artifact: Path, f: DataFile, url: str):
        self.artifact, self.f, self.url = artifact, f, url
        self._closers: list[Any] = []

    def __enter__(self) -> IO[bytes]:
        d = self.f.download
        try:
            if d.unpack == "none":
                return self._keep(open(self.artifact, "rb"))
            if d.unpack == "gzip":
                return self._keep(gzip.open(self.artifact, "rb"))
            if d.unpack == "tar":
                tar = self._keep(tarfile.open(self.artifact, "r:*"))
                try:
                    info = tar.getmember(d.member)
                except KeyError:
                    raise self._error(f"has no member {d.member!r}") from None
                if not info.isfile():
                    raise self._error(f"member {d.member!r} is not a regular file "
                                      f"(links and directories are refused)")
                return self._keep(tar.extractfile(info))
            zf = self._keep(zipfile.ZipFile(self.artifact))
            try:
                info = zf.getinfo(d.member)
            except KeyError:
                raise self._error(f"has no member {d.member!r}") from None
            if info.is_dir() or (info.external_attr >> 16) & 0o170000 == 0o120000:
                raise self._error(f"member {d.member!r} is not a regular file "
                                  f"(links and directories are refused)")
            return self._keep(zf.open(info))
        except (tarfile.TarError, zipfile.BadZipFile, gzip.BadGzipFile, EOFError) as exc:
            self.__exit__(None, None, None)
            raise self._error(f"is not a valid {d.unpack} archive ({exc})") from None
        except GraphsysError:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc) -> None:
        for obj in reversed(self._closers):
            obj.close()
        self._closers.clear()

    def _keep(self, obj):
        self._closers.append(obj)
        return obj

    def _error(self, message: str) -> GraphsysError:
        return GraphsysError(f"download of {self.url}: {message}")


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while block := stream.read(CHUNK):
        yield block


def _strip_header(stream: IO[bytes], kind: str) -> Iterator[bytes]:
    """Yield ``stream`` without its leading header lines.

    ``snap-header``: the leading lines starting with ``#``. ``matrixmarket-header``: the
    leading lines starting with ``%`` and the size line that follows them.
    """
    prefix = b"#" if kind == "snap-header" else b"%"
    line = stream.readline()
    while line.startswith(prefix):
        line = stream.readline()
    if kind == "matrixmarket-header":  # the size line
        line = stream.readline()
    if line:
        yield line
    yield from _chunks(stream)


def _write_verified(dest: Path, chunks: Iterable[bytes], sha256: str, *, what: str,
                    limit: int | None = None) -> Path:
    """Write ``chunks`` to ``dest`` through a temporary file; keep it only if its sha256 is
    ``sha256``. With ``limit`` (downloads), more than ``limit`` bytes stops reading at once,
    so a wrong or hostile artifact (e.g. a decompression bomb) cannot fill the disk."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_beside(dest, ".part-")  # a killed fetch's are removed
    h = hashlib.sha256()
    written = 0
    try:
        with open(tmp, "wb") as out:
            for block in chunks:
                written += len(block)
                if limit is not None and written > limit:
                    raise GraphsysError(f"sha256 mismatch for {what}: expected {sha256} "
                                        f"({limit} bytes), got more than {limit} bytes "
                                        f"(stopped reading)")
                h.update(block)
                out.write(block)
        got = h.hexdigest()
        if got != sha256:
            raise GraphsysError(f"sha256 mismatch for {what}: expected {sha256}, got {got}")
        os.replace(tmp, dest)
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile, tarfile.TarError) as exc:
        tmp.unlink(missing_ok=True)
        raise GraphsysError(f"{what}: cannot read or write ({exc})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dest
