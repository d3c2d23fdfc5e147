"""apps layer (see spec 00)."""
