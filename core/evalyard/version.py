"""The core's version, in a module of its own so any part of the core can read it without
importing the package's public surface (which would make an import cycle)."""

__version__ = "0.2.0"
