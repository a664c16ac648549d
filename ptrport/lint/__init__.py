"""``ptrport lint``: where device addresses meet storage that cannot hold ``2**63..2**64-1``,
found in Python source without running it.

:mod:`~ptrport.lint.checker` runs the lint over a tree: :mod:`~ptrport.lint.sources` finds the
files and reads what their text says, :mod:`~ptrport.lint.file_lint` lints each alone, across the
processes of :mod:`~ptrport.lint.workers`, and :mod:`~ptrport.lint.index_rounds` again where what
another module gives may change what it finds. :mod:`~ptrport.lint.flow` follows the
:mod:`~ptrport.lint.values` of each module's expressions, reading what library calls do from
:mod:`~ptrport.lint.library` and :mod:`~ptrport.lint.dtypes` and what sign conversions compute
from :mod:`~ptrport.lint.reinterpret`; :mod:`~ptrport.lint.rules` words each site it finds,
:mod:`~ptrport.lint.suppressions` reads the comments that accept one, and
:mod:`~ptrport.lint.formats` writes the findings out. :mod:`~ptrport.lint.config` reads a
project's ``[tool.ptrport.lint]`` table, and :mod:`~ptrport.lint.baseline` the findings it
accepts for now."""

FORMATS = ("text", "json", "sarif", "github")
"""The output formats of a lint run (:mod:`ptrport.lint.formats`)."""
