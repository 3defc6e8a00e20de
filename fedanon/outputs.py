"""The files one command writes: checked before any work, then written all together or not at all.

Every command that writes files (releases, reports, id maps, charts) goes through
:class:`CommandOutputs`, which makes three promises (docs/output-safety.md):

1. **Never overwrite an input.** Each output is compared with the command's input files after
   resolving the path, symlinks and hard links (same device and inode), so ``--out`` naming the
   raw table, a symlink to it or a hard link of it is refused before anything runs.
2. **Fail before the work, not after it.** A missing directory, a directory given as a file
   (also through a symlink), a place the process cannot create files in (``/proc``, read-only
   mounts) or two outputs naming one file are refused when the output is claimed, so a long run
   never ends with an unwritable path.
3. **All or nothing.** Outputs are first written to hidden temporaries beside their targets and
   renamed onto them only when every one of them is complete. On any failure, including an
   interrupt or SIGTERM (the CLI turns it into an exception), the temporaries are removed and the
   files that existed before are left as they were.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from fedanon.atomic import SYMLINK_REFUSED
from fedanon.errors import FedanonError
from fedanon.readers.table_io import write_table_to
from fedanon.tables import Table

PathLike = str | os.PathLike[str]


def same_file(a: Path, b: Path) -> bool:
    """True when `a` and `b` name one file: equal resolved paths, or one device and inode."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): they cannot be the same file
        return False


def _unusable(exc: OSError) -> str:
    """Why a path the file system refuses to look at cannot be an output."""
    return f"cannot be used ({exc.strerror or type(exc).__name__})"


def _temp_beside(target: Path) -> Path:
    """A new empty hidden file beside `target`, keeping its suffix (writers pick formats by it)."""
    fd, name = tempfile.mkstemp(
        prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}", dir=target.parent
    )
    os.close(fd)
    return Path(name)


class CommandOutputs:
    """The output files of one command run, validated as they are claimed."""

    def __init__(self, inputs: Iterable[PathLike | None] = ()) -> None:
        self._inputs = [Path(p) for p in inputs if p is not None and str(p) != ""]
        self._claimed: dict[Path, str] = {}
        self._new_directories: list[Path] = []

    def claim(self, what: str, path: PathLike | None) -> Path | None:
        """Check that `path` (the value of option or key `what`) can be written; None passes.

        Raises a one-line :class:`FedanonError` naming `what` and the path otherwise.
        """
        if path is None:
            return None
        target = Path(path)
        try:
            problem = self._problem(target)
        except OSError as exc:  # a name too long, a directory that cannot be searched, ...
            problem = _unusable(exc)
        if problem:
            raise FedanonError(f"{what} {target}: {problem}")
        self._claimed[target] = what
        return target

    def claim_directory(self, what: str, path: PathLike) -> Path:
        """Check an output directory: an existing one, or one that can be created."""
        directory = Path(path)
        try:
            if directory.exists() and not directory.is_dir():
                raise FedanonError(f"{what} {directory}: exists and is not a directory")
            problem = self._plan_directories(directory)
        except OSError as exc:
            problem = _unusable(exc)
        if problem:
            raise FedanonError(f"{what} {directory}: {problem}")
        return directory

    def _problem(self, target: Path) -> str | None:
        """Why `target` cannot be an output, or None."""
        if str(target) in ("", "."):
            return "not a file name"
        if target.is_dir() or target in self._new_directories:
            return "is a directory (give a file name)"
        for source in self._inputs:
            if same_file(target, source):
                return f"is the input {source}; refusing to overwrite it"
        for other, what in self._claimed.items():
            if same_file(target, other):
                return f"is also the {what} output"
        if target.is_symlink():
            return SYMLINK_REFUSED
        return self._plan_directories(target.parent)

    def _plan_directories(self, directory: Path) -> str | None:
        """Why files cannot be created in `directory`, or None; plan its missing ancestors.

        Missing directories (like ``mkdir -p``) are created only when the outputs are written
        and removed again if writing fails, so a refused or failed run leaves none behind.
        """
        missing: list[Path] = []
        existing = directory
        while not existing.exists() and existing not in self._new_directories:
            if existing in self._claimed:
                return f"{existing} is the {self._claimed[existing]} output, not a directory"
            missing.append(existing)
            existing = existing.parent
        if existing in self._new_directories:
            self._new_directories += reversed(missing)
            return None
        if not existing.is_dir():
            return f"{existing} is not a directory"
        try:
            _temp_beside(existing / "probe").unlink()
        except OSError as exc:
            return f"cannot create files in {existing} ({exc.strerror or type(exc).__name__})"
        self._new_directories += reversed(missing)
        return None

    @contextlib.contextmanager
    def writing(self) -> Iterator[StagedWrites]:
        """Stage outputs inside the block; rename them all onto their targets when it ends well."""
        staged = StagedWrites(self._claimed)
        created = []
        try:
            try:
                for directory in self._new_directories:
                    if not directory.is_dir():
                        directory.mkdir()
                        created.append(directory)
                yield staged
            except OSError as exc:  # disk full, I/O error while staging: a user-facing failure
                raise FedanonError(f"cannot write the outputs ({exc}); none was written") from None
            staged.commit()
        except BaseException:
            staged.discard()
            for directory in reversed(created):
                with contextlib.suppress(OSError):  # not empty: something else wrote there
                    directory.rmdir()
            raise


class StagedWrites:
    """Temporaries of claimed outputs, renamed onto their targets together by :meth:`commit`."""

    def __init__(self, claimed: dict[Path, str]) -> None:
        self._claimed = claimed
        self._temps: dict[Path, Path] = {}

    def path(self, target: PathLike) -> Path:
        """A temporary file to write `target`'s content to (same directory and suffix)."""
        target = Path(target)
        if target not in self._claimed:
            raise ValueError(f"{target} was not claimed as an output")  # a programming error
        if target not in self._temps:
            try:
                self._temps[target] = _temp_beside(target)
            except OSError as exc:
                what = self._claimed[target]
                raise FedanonError(f"{what} {target}: cannot write ({exc.strerror})") from None
        return self._temps[target]

    def table(self, target: PathLike, table: Table, delimiter: str | None = None) -> None:
        """Stage a table (CSV, TSV or Parquet by `target`'s suffix; CSV with `delimiter`)."""
        write_table_to(table, self.path(target), Path(target), delimiter)

    def json(self, target: PathLike, payload: object) -> None:
        """Stage a JSON document (reports)."""
        self.path(target).write_text(
            json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8"
        )

    def commit(self) -> None:
        """Rename every temporary onto its target; on a failure restore the targets done so far.

        Temporaries and targets share a directory, so each rename is atomic; the previous content
        of a replaced target is kept as a hard link until all renames succeeded.
        """
        done: list[tuple[Path, Path | None]] = []
        try:
            for target, temp in self._temps.items():
                backup = _backup(target)
                try:
                    os.replace(temp, target)
                except OSError:
                    if backup is not None:
                        backup.unlink(missing_ok=True)
                    raise
                done.append((target, backup))
        except OSError as exc:
            for target, backup in reversed(done):
                if backup is not None:
                    os.replace(backup, target)
                else:
                    target.unlink(missing_ok=True)
            raise FedanonError(f"cannot write the outputs ({exc}); none was written") from None
        for _target, backup in done:
            if backup is not None:
                backup.unlink(missing_ok=True)
        self._temps.clear()

    def discard(self) -> None:
        """Remove the temporaries that were not committed."""
        for temp in self._temps.values():
            temp.unlink(missing_ok=True)
        self._temps.clear()


def _backup(target: Path) -> Path | None:
    """A hard link to `target`'s current content (None if there is none to keep)."""
    if not target.exists():
        return None
    backup = _temp_beside(target)
    backup.unlink()
    try:
        os.link(target, backup)
    except OSError:  # a file system without hard links: keep a copy instead
        shutil.copy2(target, backup)
    return backup
