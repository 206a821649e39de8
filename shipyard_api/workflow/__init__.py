"""Shipyard's durable workflow engine: persisted actions and steps run under database leases."""
