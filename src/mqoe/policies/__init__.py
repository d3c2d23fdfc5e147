"""policies layer (see spec 00)."""
