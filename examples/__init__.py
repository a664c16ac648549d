"""Worked examples of users' own subjects; see docs/subjects.md."""
