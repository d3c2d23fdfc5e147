"""Synthetic inputs with known ground truth, one module per real-data format (for tests,
demos and benchmarks); what they write is read back by :mod:`mqoe.analysis`."""
