"""analysis layer: parsers and pipelines for data pulled from real phones, in their real
formats (gfxinfo, atrace/systrace, ANR traces, memory-signal logs, view hierarchies, pcap)."""
