"""Drydock tasks: states, persistence-facing service, orchestrator and action steps."""
