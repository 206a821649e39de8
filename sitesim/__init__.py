"""sitesim package."""
