"""Command line interface (``mqoe``)."""
