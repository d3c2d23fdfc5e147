"""device layer (see spec 00)."""
