"""What the validation scripts share: rewriting their marked section of
docs/validation.md and naming the simulator revision their tables come from."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path


def replace_section(doc: Path, begin: str, end: str, section: str) -> None:
    """Replaces the text from ``begin`` to ``end`` in ``doc`` by ``section``
    (or appends it), atomically, leaving every other section alone."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1].lstrip("\n")
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section
    fd, tmp = tempfile.mkstemp(dir=doc.parent, prefix=".validation-")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, doc)


def sim_revision(root: Path) -> str:
    """The last commit touching crates/ (what the simulated columns ran)."""
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "log", "-1", "--format=%h (%cs)", "--", "crates"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = ""
    return f"commit {rev} of crates/" if rev else "this checkout"
