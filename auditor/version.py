"""The package version (pyproject.toml reads it; reports state it)."""
__version__ = "0.1.0"
