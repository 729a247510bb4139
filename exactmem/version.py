"""The package version, in one place (the root package, the command line and sweep records read it)."""

__version__ = "0.1.0"
