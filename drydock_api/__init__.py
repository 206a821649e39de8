"""drydock_api package."""
