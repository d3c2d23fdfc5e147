"""Real-TCP testbed (issue 9): the spiral over the Linux TCP stack, for cross-checking
the packet-level model. Linux and root only; see docs/guide/testbed.md.

* :mod:`~mqoe.emulation.topology` — namespaces, veths, the tbf bottleneck, cleanup.
* :mod:`~mqoe.emulation.owner` — who owns a run (pid + start time), alive or dead; run
  folders.
* :mod:`~mqoe.emulation.delayline` — the TUN delay line that sets the base RTT.
* :mod:`~mqoe.emulation.agent` — the processes inside the namespaces (server, client,
  bulk sender and sink, delay line); :mod:`~mqoe.emulation.launch` starts them together.
* :mod:`~mqoe.emulation.client` — the ABR client on real sockets (the simulator's rules).
* :mod:`~mqoe.emulation.receiver` — receiver controls on real sockets (rule → setsockopt).
* :mod:`~mqoe.emulation.spiral` — one spiral run, real or simulated, as the same rows.
* :mod:`~mqoe.emulation.bulk` — bulk flows alone, real or simulated, with TCP counters.
* :mod:`~mqoe.emulation.compare` — two metrics.csv files side by side.
"""
