"""analysis layer (see spec 00)."""
