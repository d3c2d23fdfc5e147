"""device layer."""
