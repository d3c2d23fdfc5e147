"""metrics layer (see spec 00)."""
