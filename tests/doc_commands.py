"""Extract the ```sh command blocks of a Markdown document and run them as a reader would.

A reader copies the blocks of one page in order into one shell, so the blocks of a document run
in one ``bash`` session (variables such as ``D=...`` carry over, files made by one block are
there for the next) with ``set -euo pipefail``: the first failing command fails the document and
is reported with the block's line. A block a test cannot run here (it installs the package,
needs Docker, a cluster or three hosts) is preceded by an HTML comment, invisible on the rendered
page, that says why and which test covers it instead::

    <!-- doc-test: skip (needs Docker; the same steps: tests/deploy/test_local_federation.py) -->
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tests.harness.procs import group_members
from tests.harness.wait import wait_while

FENCE_OPEN = re.compile(r"^(?P<indent>\s*)```sh\s*$")
FENCE_CLOSE = re.compile(r"^\s*```\s*$")
SKIP = re.compile(r"^\s*<!--\s*doc-test:\s*skip\s*\((?P<reason>.+)\)\s*-->\s*$")
MARKER = ".doc-test-block"
TIMED_OUT = -signal.SIGKILL  # the return code of a run whose group was killed at its timeout


@dataclass(frozen=True)
class Block:
    """One ```sh block: its opening fence's line, its commands, why it is skipped (None: runs)."""

    doc: str
    line: int
    code: str
    skip: str | None = None


def extract_blocks(text: str, doc: str) -> list[Block]:
    """Every ```sh block of `text`, dedented; a skip comment applies to the next block only."""
    blocks: list[Block] = []
    lines = text.splitlines()
    skip: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if match := SKIP.match(line):
            skip = match["reason"].strip()
        elif match := FENCE_OPEN.match(line):
            start = i + 1
            body: list[str] = []
            i += 1
            while i < len(lines) and not FENCE_CLOSE.match(lines[i]):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise ValueError(f"{doc}:{start}: ```sh block is never closed")
            code = textwrap.dedent("\n".join(body))
            blocks.append(Block(doc, start, code, skip))
            skip = None
        elif line.strip() and skip is not None:
            raise ValueError(f"{doc}:{i + 1}: a doc-test skip comment must precede a ```sh block")
        i += 1
    return blocks


@dataclass
class DocRun:
    """The outcome of running a document's blocks."""

    returncode: int
    failed_block: Block | None
    output: str


def run_blocks(
    blocks: list[Block], cwd: Path, env: dict[str, str], timeout: float = 1800
) -> DocRun:
    """Run the blocks that are not skipped in one bash session in `cwd`; name the failing one.

    The session runs in its own process group, which is killed when bash exits (or at
    `timeout`), so a daemon a block left in the background cannot outlive the run; and its
    output goes to a file, not a pipe, so such a daemon cannot keep the runner waiting for an
    end of file that never comes (``subprocess.run(capture_output=True)`` waited forever).
    """
    runnable = [b for b in blocks if b.skip is None]
    parts = ["set -euo pipefail"]
    for index, block in enumerate(runnable):
        parts.append(f"echo {index} > '{cwd / MARKER}'")
        parts.append(block.code)
    parts.append(f"rm -f '{cwd / MARKER}'")
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            ["bash", "-c", "\n".join(parts)],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            returncode = process.wait(timeout)
        except subprocess.TimeoutExpired:
            returncode = TIMED_OUT
        finally:
            kill_group(process)
        output.seek(0)
        text = output.read().decode(errors="replace")
    if returncode == TIMED_OUT:
        text += f"\n[doc-test: timed out after {timeout:g} s; its process group was killed]\n"
    failed = None
    marker = cwd / MARKER
    if returncode != 0 and marker.exists():
        failed = runnable[int(marker.read_text().strip())]
    return DocRun(returncode, failed, text)


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL every process left in `process`'s group (its own session), reap it, and return
    only once no member is alive.

    SIGKILL is delivered asynchronously: on a busy machine a background member can still be
    running (not yet a zombie) for a moment after ``killpg`` returns, so returning at once let a
    caller see it outlive the run (a CI failure). The wait is bounded; a member that somehow
    survives is left for the caller's own check to name.
    """

    def kill() -> list[int]:
        """Signal the group again (a member forked meanwhile) and name who is still alive."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        return group_members(process.pid)

    kill()
    process.wait()
    wait_while(kill, interval=0.02)
