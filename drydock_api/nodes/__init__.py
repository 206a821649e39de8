"""Drydock's view of the design's nodes: parsing, node filters, validation, inventory."""
