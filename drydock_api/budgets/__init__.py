"""Failure-domain budgets: the design's declarations and the slots held against them."""
