"""sweep layer (see spec 00)."""
