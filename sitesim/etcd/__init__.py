"""Real etcd clusters for the simulated site, and how they follow the site's nodes."""
