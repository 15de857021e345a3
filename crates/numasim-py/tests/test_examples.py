"""Every Python example runs exactly as the docs show it (issue 33: the
documented Dask example crashed for lack of a __main__ guard). The commands
are read from the docs' code blocks, so a doc edit is tested as written."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def documented_commands() -> list[tuple[str, str]]:
    """(doc, command) for each code-block line that runs a Python example."""
    out = []
    for doc in DOCS:
        inside = False
        for line in doc.read_text().splitlines():
            if line.startswith("```"):
                inside = not inside
                continue
            cmd = line.split("#", 1)[0].strip().removeprefix("$ ")
            if inside and re.match(r"python3? examples/", cmd):
                out.append((doc.name, cmd))
    return out


COMMANDS = documented_commands()


def test_every_python_example_is_documented_with_a_command():
    shown = {shlex.split(c)[1] for _, c in COMMANDS}
    examples = {str(p.relative_to(REPO)) for p in (REPO / "examples").rglob("*.py")}
    assert examples, "no Python examples found"
    assert examples <= shown, f"examples with no command in the docs: {examples - shown}"


@pytest.mark.parametrize("doc,cmd", COMMANDS, ids=[c for _, c in COMMANDS])
def test_documented_example_runs_as_written(doc, cmd, tmp_path):
    # Run from a scratch folder that sees the repository's examples/ under
    # the same relative path, so files the command writes land there.
    (tmp_path / "examples").symlink_to(REPO / "examples")
    argv = shlex.split(cmd)
    argv[0] = sys.executable
    p = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{doc}: `{cmd}` exited {p.returncode}\n{p.stderr[-3000:]}"
    for arg in argv[2:]:
        if arg.endswith(".png"):
            assert (tmp_path / arg).stat().st_size > 1000, f"{doc}: `{cmd}` wrote no {arg}"
