"""Deployment strategies: groups of nodes, their order, selection and success criteria (pure)."""
