"""report layer (see spec 00)."""
