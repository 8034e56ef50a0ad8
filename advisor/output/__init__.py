"""output package."""
