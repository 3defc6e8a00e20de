"""The one way tests run the fedanon CLI: in this process or as a separate process.

In-process (:func:`run_cli`) is fast enough for property tests and lets a test patch the code
under the command; a separate process (:func:`run_cli_process`, or :data:`FEDANON` for a command
the test signals or keeps running) is for what only a real process shows: the exit status the
shell sees, signal handling, the import of the entry point, pipes instead of terminals. Both
return a :class:`CliResult`, and :func:`assert_one_line_error` checks the house rule for a
user-facing error on either. A test that signals a process it started holds it in :func:`owned`
(killed on every way out) and signals it with :func:`stop_with` (its output, how long it took).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from fedanon.cli.main import main

#: ``fedanon`` as a separate process of this interpreter (the installed entry point's module).
FEDANON = [sys.executable, "-m", "fedanon.cli.main"]


@dataclass
class CliResult:
    """What one command did: its exit code and everything it printed."""

    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def run_cli(*args: str | Path) -> CliResult:
    """``fedanon ARGS`` in this process: exit code (argparse's exits too), stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return CliResult(code, out.getvalue(), err.getvalue())


def run_cli_process(
    *args: str | Path,
    timeout: float = 300,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> CliResult:
    """``fedanon ARGS`` as a separate process, as a container runs it: stdin closed, stdout and
    stderr pipes (not terminals), the environment `env` (default: this one). Raises
    ``subprocess.TimeoutExpired`` after `timeout` seconds (the process is killed)."""
    done = subprocess.run(
        [*FEDANON, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ if env is None else env),
        cwd=cwd,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


@contextlib.contextmanager
def owned(process: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """`process`, killed and reaped on the way out of the block if it still runs (a test owns
    the processes it starts on every exit path, a failed assertion's included)."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@dataclass
class Stopped:
    """What a process printed after a signal, and how long it ran on after it."""

    out: str
    err: str
    seconds: float


def stop_with(
    process: subprocess.Popen[str], sig: int = signal.SIGTERM, timeout: float = 60.0
) -> Stopped:
    """Send `sig` to `process` and wait for it to exit, at most `timeout` seconds (then
    ``subprocess.TimeoutExpired``; the process is left to :func:`owned`)."""
    process.send_signal(sig)
    began = time.monotonic()
    out, err = process.communicate(timeout=timeout)
    return Stopped(out, err, time.monotonic() - began)


def snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry under `directory`: file bytes, the target of a symlink, or 'dir' (compared
    before and after a refused command: a refusal writes nothing)."""
    found: dict[str, bytes | str] = {}
    for path in sorted(directory.rglob("*")):
        key = str(path.relative_to(directory))
        if path.is_symlink():
            found[key] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[key] = "dir"
        else:
            found[key] = path.read_bytes()
    return found


def assert_one_line_error(result: CliResult, *needles: str) -> str:
    """Exit 2, exactly one stderr line, an error line, no traceback; return the line."""
    lines = result.err_lines
    assert result.code == 2, result.err
    assert "Traceback" not in result.err, result.err
    assert len(lines) == 1 and lines[0].startswith("fedanon: error: "), result.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def lkc_options(data: str | Path, taxonomy: str | Path, K: int = 4, C: str = "0.5") -> list[str]:
    """The LKC job most CLI tests run: `data` and `taxonomy` at L = 2, K, C (default 0.5)."""
    return [
        *("--data", str(data), "--taxonomy", str(taxonomy)),
        *("--L", "2", "--k", str(K), "--C", C),
    ]


# The small hospital-like job most CLI tests run: two QIDs (a numeric and a categorical
# taxonomy), HIV as the sensitive value in one row of ten, a binary class.
TAXONOMY = """
qids = ["age", "job"]
[sensitive]
disease = ["HIV"]
[class]
column = "outcome"
values = ["no", "yes"]
[attributes.age]
kind = "numeric"
tree = \"\"\"
[0, 100)
  [0, 50)
  [50, 100)
\"\"\"
[attributes.job]
kind = "categorical"
tree = \"\"\"
Any
  Blue
    Janitor
    Mover
  White
    Clerk
    Lawyer
\"\"\"
"""


def small_table(rows: int = 40) -> str:
    """`rows` records for TAXONOMY: pid, age, job, disease (HIV in 1 of 10), outcome."""
    jobs = ["Janitor", "Mover", "Clerk", "Lawyer"]
    lines = ["pid,age,job,disease,outcome"]
    for i in range(rows):
        disease = "HIV" if i % 10 == 0 else "Flu"
        lines.append(f"{i},{(i * 7) % 100},{jobs[i % 4]},{disease},{'yes' if i % 3 else 'no'}")
    return "\n".join(lines) + "\n"
