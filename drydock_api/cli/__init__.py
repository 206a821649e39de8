"""The `drydock` command: what an operator runs against Drydock's world from a workstation."""
