"""``ptrport lint``: where device addresses meet storage that cannot hold ``2**63..2**64-1``,
found in Python source without running it.

:mod:`~ptrport.lint.checker` reads and parses the files; :mod:`~ptrport.lint.flow` follows the
:mod:`~ptrport.lint.values` of each module's expressions, reading what library calls do from
:mod:`~ptrport.lint.library` and :mod:`~ptrport.lint.dtypes` and what sign conversions compute
from :mod:`~ptrport.lint.reinterpret`; :mod:`~ptrport.lint.rules` words each site it finds,
:mod:`~ptrport.lint.suppressions` reads the comments that accept one, and
:mod:`~ptrport.lint.formats` writes the findings out. :mod:`~ptrport.lint.config` reads a
project's ``[tool.ptrport.lint]`` table, and :mod:`~ptrport.lint.baseline` the findings it
accepts for now."""

FORMATS = ("text", "json", "sarif", "github")
"""The output formats of a lint run (:mod:`ptrport.lint.formats`)."""
