"""apache-advisor: read, lint, size and tune Apache httpd configurations."""

__version__ = "0.1.0"
