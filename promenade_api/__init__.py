"""promenade_api package."""
