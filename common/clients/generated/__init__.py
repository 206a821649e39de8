"""Wire types generated from the OpenAPI documents (tools/wiretypes.py)."""
