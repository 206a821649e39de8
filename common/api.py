"""The one API prefix every Berth service routes under and every client calls."""

API_PREFIX = "/api/v1.0"
