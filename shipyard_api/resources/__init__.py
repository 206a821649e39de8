"""Shipyard's thin Falcon resources: parse, call the domain, render."""
