"""Each service's wire types and the one client the other components use to reach it.

`common.clients.<service>` belongs to that service: its TypedDicts mirror the service's
OpenAPI document (schemas/openapi/<service>.yaml; tests/unit/common/test_wire.py checks every
key and which are required) and its client is the only code that calls the service over HTTP.
They sit in `common` so the services stay independent of each other (see .importlinter).
"""
