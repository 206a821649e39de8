"""Kubernetes access (one port over the official client, with a fake) and node operations."""
