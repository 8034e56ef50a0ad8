"""The one SSH transport that staging, load and measurement use for other hosts."""
