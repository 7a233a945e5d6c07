"""Placeholder: filled in by the work on issue 49 part 3."""

SCORERS: tuple = ()
