"""Plans: what an action would do, read from the owners of the facts; nothing is changed."""
