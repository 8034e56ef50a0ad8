"""capacity package."""
