"""apps layer."""
