"""Boot actions: assets Drydock places on the nodes it deploys, and their reports."""
