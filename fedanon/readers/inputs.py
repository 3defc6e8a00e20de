"""Input files read once, each file's SHA-256 taken from the very bytes its reader parses.

Every table the CLI, the central algorithms and a party daemon read, and every taxonomy, is
opened once: a reader that opens a file twice (to sniff a text table's delimiter and header,
then to parse it; or to parse, then to hash) can mix two versions of a file replaced or
appended meanwhile: the header of one with the rows of another, or a digest of other bytes
than those parsed. A party daemon binds a sealed session to a digest of its inputs
(party/inputs.py, `inputs_digest`), and a CLI report names its inputs by their SHA-256
(fedanon/report/build.py, :func:`recorded_digest`): both must be of the bytes parsed. So a
taxonomy is
read whole through :func:`read_input`, then parsed from those bytes; a table through
:class:`ReadOnce`, a stream its parser reads front to back, hashed as it goes (a text table is
never held whole as bytes: the CPU and memory of Arrow reading the path; a Parquet file, read
at random places, is read whole first when hashed). Inside :func:`recording_inputs` the digest
of the bytes read is recorded; outside it nothing is hashed (a CLI command without a report,
a daemon without sealed sessions pays nothing for it).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import stat
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # pyarrow loads with the first table read, never at the CLI's start-up
    import pyarrow as pa
    from _typeshed import WriteableBuffer

from fedanon.errors import FedanonError

T = TypeVar("T")

#: The first bytes of a text table looked at before its parser reads it (grown, by four
#: times, while a header row does not end within them).
HEAD_BYTES = 1 << 16
#: The most the head grows to: a first row longer than this (a file with no line break, a
#: binary file named .csv) is refused in one line, not held whole as text several times over.
MAX_HEAD_BYTES = 1 << 26

#: The files read under the innermost `recording_inputs`: (path, SHA-256 of its bytes).
_recorded: ContextVar[list[tuple[Path, bytes]] | None] = ContextVar("recorded", default=None)


@contextlib.contextmanager
def recording_inputs() -> Iterator[list[tuple[Path, bytes]]]:
    """Record what :func:`read_input` reads in this context, in read order."""
    files: list[tuple[Path, bytes]] = []
    token = _recorded.set(files)
    try:
        yield files
    finally:
        _recorded.reset(token)


def recorded_digest(path: str | os.PathLike[str]) -> bytes | None:
    """The SHA-256 the active :func:`recording_inputs` took of `path`'s bytes as they were
    read (its last read), or None: what a report names an input by, never a second read
    of a file that may have been replaced since."""
    files = _recorded.get() or []
    return next((digest for read, digest in reversed(files) if read == Path(path)), None)


def open_regular(path: Path) -> io.FileIO:
    """`path` opened for reading (unbuffered) if it is a regular file, links followed.

    A FIFO's open blocks until a writer comes and its reading never ends without one; a
    device (/dev/zero) or a terminal (a link to /dev/stdin) never ends or waits for a
    keyboard: each is one error naming the file (FedanonError), never a hang. Opened without
    blocking, then checked on the descriptor opened (no race with a file swapped in between).
    A directory raises IsADirectoryError, as ``open`` does; other failures OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise FedanonError(
                f"{path}: not a regular file (a FIFO, a device or a terminal is not read)"
            )
        os.set_blocking(fd, True)
        return io.FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def read_input(path: Path) -> bytes:
    """The bytes of the regular file `path` (:func:`open_regular`), read with one open; their
    SHA-256 is recorded when a :func:`recording_inputs` is active."""
    with open_regular(path) as file:
        data = file.read()
    files = _recorded.get()
    if files is not None:
        files.append((path, hashlib.sha256(data).digest()))
    return data


def text_of(data: bytes, newline: str | None = None) -> io.TextIOWrapper:
    """`data` as the text file ``open(path, encoding="utf-8-sig", newline=newline)`` would
    give: a byte-order mark dropped, the same newline translation, the same decoding errors."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=newline)


class ReadOnce:
    """A file opened once and read front to back by one parser (``read``, or
    :meth:`read_buffer` where Arrow's reader asks for it); its first bytes can be parsed
    before (:meth:`from_head`: a text table's delimiter and header), and every byte read is
    hashed once, in order, when a :func:`recording_inputs` is active (recorded at
    :meth:`close`, after the rest is read). A reader that reads at random places (Parquet)
    takes :meth:`random_access` instead."""

    closed = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open_regular(path)
        self._files = _recorded.get()
        self._digest = None if self._files is None else hashlib.sha256()
        self._head = b""  # read from the file and not yet given to the parser
        self._eof = False

    def __enter__(self) -> ReadOnce:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(complete=kind is None)

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        """The next `size` bytes (all the rest with -1): the head's first, then the file's."""
        if size < 0:
            data, self._head = self._head + self._take(-1), b""
            return data
        data, self._head = self._head[:size], self._head[size:]
        return data + self._take(size - len(data)) if len(data) < size else data

    def readinto(self, buffer: WriteableBuffer) -> int:
        """Fill `buffer` with the next bytes (the head's first, then the file's) as a regular
        file's raw read does, without a copy through a `bytes`: all of it but at the end of
        the file, so a parser sees the blocks it sees reading the path."""
        with memoryview(buffer) as view, view.cast("B") as target:
            count = min(len(target), len(self._head))
            target[:count] = self._head[:count]
            self._head = self._head[count:]
            while count < len(target) and not self._eof:
                done = self._file.readinto(target[count:]) or 0
                self._eof = not done
                if self._digest is not None:
                    self._digest.update(target[count : count + done])
                count += done
            return count

    def read_buffer(self, size: int) -> pa.Buffer:
        """:meth:`read`'s bytes in a buffer of Arrow's memory pool, which Arrow's reader of a
        Python file takes as it is. Why: a fresh Python `bytes` of each block (1 MiB) is
        fresh memory, a page fault every 4 KiB (about 13 % more CPU than Arrow reading the
        path, bench/RESULTS.md "session 13, one reading path"); Arrow's pool reuses its
        blocks."""
        import pyarrow as pa

        if size < 0:
            return pa.py_buffer(self.read())
        buffer = pa.allocate_buffer(size, resizable=True)
        with memoryview(buffer) as view:
            done = self.readinto(view)
        if done < size:
            buffer.resize(done)
        return buffer

    def random_access(self) -> pa.NativeFile:
        """The file for a parser that reads it at random places (Parquet: its footer first,
        then only the columns asked for): the open file itself, or, when a digest is
        recorded, its whole bytes read (and hashed) into memory first, so the digest is of
        the bytes parsed. Called before anything else is read."""
        import pyarrow as pa

        if self._digest is not None:
            return pa.BufferReader(self.read())
        return pa.PythonFile(self._file, mode="r")

    def binary_file(self) -> io.BufferedReader:
        """The stream as an `io` binary file, for a parser that reads one otherwise than any
        object with a ``read`` (pandas decodes an `io` file's text as it decodes a path's:
        the same cells and the same errors)."""
        return io.BufferedReader(_RawReader(self))

    def from_head(self, parse: Callable[[io.TextIOWrapper], T]) -> T:
        """`parse` of the file's beginning as text (``open(path, encoding="utf-8-sig",
        newline="")``), its head grown until `parse` stops before its end (a whole first
        row) or it is the whole file: `parse` sees what it would see reading the file. A first
        row that does not end within ``MAX_HEAD_BYTES`` is refused (FedanonError)."""
        size = HEAD_BYTES
        while True:
            if size > MAX_HEAD_BYTES:
                raise FedanonError(
                    f"{self.path}: cannot read table (its first row is longer than "
                    f"{MAX_HEAD_BYTES >> 20} MiB: not a text table?)"
                )
            if len(self._head) < size and not self._eof:
                self._head += self._take(size - len(self._head))
            handle = text_of(self._head, newline="")
            try:
                result = parse(handle)
            except UnicodeDecodeError as exc:
                if self._eof or exc.reason != "unexpected end of data":
                    raise  # not a character cut at the head's end
            else:
                if self._eof or _continues(handle):
                    return result
            size *= 4

    def _take(self, size: int) -> bytes:
        """The next `size` bytes of the file (all the rest with -1), hashed."""
        parts = []
        while size and not self._eof:
            part = self._file.read(size if size > 0 else 1 << 20)
            if not part:
                self._eof = True
                break
            if self._digest is not None:
                self._digest.update(part)
            parts.append(part)
            size = size - len(part) if size > 0 else -1
        return b"".join(parts)

    def close(self, complete: bool = True) -> None:
        """Close the file; when the parse completed, record the digest of all its bytes (any
        left unread are read for it: the digest is of the whole file)."""
        if self.closed:
            return
        try:
            if complete and self._files is not None and self._digest is not None:
                while self._take(1 << 20):
                    pass
                self._files.append((self.path, self._digest.digest()))
        finally:
            self._file.close()
            self.closed = True


class _RawReader(io.RawIOBase):
    """A :class:`ReadOnce` as the raw file an `io.BufferedReader` reads."""

    def __init__(self, stream: ReadOnce) -> None:
        super().__init__()
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        return self._stream.readinto(buffer)


def _continues(handle: io.TextIOWrapper) -> bool:
    """Whether text follows what was read of `handle` (bytes that do not decode follow too)."""
    try:
        return bool(handle.read(1))
    except UnicodeDecodeError:
        return True
