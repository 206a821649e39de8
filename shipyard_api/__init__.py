"""shipyard_api package."""
