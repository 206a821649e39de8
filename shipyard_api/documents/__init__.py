"""Shipyard's Deckhand-compatible document store: revisions, buffer, tags, diffs, commits."""
