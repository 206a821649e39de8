"""Ports to the outside world (MAAS, BMCs, Promenade) with in-memory fakes beside them."""
