"""MkDocs hook: a line ``<!-- ptrport COMMAND... --help -->`` in a page becomes that command's
``--help``, run from this checkout when the site is built, so the reference cannot drift from
the parser."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

PLACEHOLDER = re.compile(r"^<!-- (ptrport(?: [a-z]+)*) --help -->$", re.MULTILINE)
COLUMNS = "100"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    root = Path(config["config_file_path"]).parent
    return PLACEHOLDER.sub(lambda found: _help_block(found.group(1), root), markdown)


def _help_block(command: str, root: Path) -> str:
    arguments = command.split()[1:]
    env = {
        **os.environ,
        "COLUMNS": COLUMNS,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-m", "ptrport.cli", *arguments, "--help"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise PluginError(f"{command} --help exited {done.returncode}: {done.stderr.strip()}")
    return f"```text\n$ {command} --help\n{done.stdout.rstrip()}\n```"
