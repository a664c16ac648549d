"""Worked examples of users' own subjects; see examples/README.md."""
