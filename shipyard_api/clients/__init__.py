"""Shipyard's clients for Promenade and Drydock: ports, HTTP implementations, fakes."""
