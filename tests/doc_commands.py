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

import re
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

FENCE_OPEN = re.compile(r"^(?P<indent>\s*)```sh\s*$")
FENCE_CLOSE = re.compile(r"^\s*```\s*$")
SKIP = re.compile(r"^\s*<!--\s*doc-test:\s*skip\s*\((?P<reason>.+)\)\s*-->\s*$")
MARKER = ".doc-test-block"


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
    """Run the blocks that are not skipped in one bash session in `cwd`; name the failing one."""
    runnable = [b for b in blocks if b.skip is None]
    parts = ["set -euo pipefail"]
    for index, block in enumerate(runnable):
        parts.append(f"echo {index} > '{cwd / MARKER}'")
        parts.append(block.code)
    parts.append(f"rm -f '{cwd / MARKER}'")
    done = subprocess.run(
        ["bash", "-c", "\n".join(parts)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    failed = None
    marker = cwd / MARKER
    if done.returncode != 0 and marker.exists():
        failed = runnable[int(marker.read_text().strip())]
    return DocRun(done.returncode, failed, done.stdout + done.stderr)
