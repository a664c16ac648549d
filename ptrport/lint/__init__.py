"""``ptrport lint``: where device addresses meet storage that cannot hold ``2**63..2**64-1``,
found in Python source without running it (:mod:`ptrport.lint.checker`)."""

FORMATS = ("text", "json", "sarif")
"""The output formats of a lint run (:mod:`ptrport.lint.formats`)."""
