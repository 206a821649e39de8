"""Shipyard's actions: each a definition of steps the workflow engine runs (the list is
shipyard_api/catalog.py)."""
