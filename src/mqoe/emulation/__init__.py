"""Real-TCP testbed (issue 9): namespaces, tbf, a TUN delay line and real endpoints."""
