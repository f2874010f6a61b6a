"""The txsql version (a leaf: lower layers read it without importing the package API)."""

__version__ = "0.1.0"
