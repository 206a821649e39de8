"""The `shipyard` command line client."""
