"""``python -m ptrport.cli``: the ``ptrport`` command."""

from ptrport.cli import run

run()
