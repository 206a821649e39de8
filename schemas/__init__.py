"""JSON Schemas (YAML) of Berth's documents and request bodies, and the OpenAPI documents."""
