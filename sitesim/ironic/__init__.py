"""A real OpenStack Ironic for the simulated site (own venv, standalone, SQLite)."""
