"""Each service's wire types and the one client the other components use to reach it.

`common.clients.<service>` belongs to that service: its wire types are generated from the
service's OpenAPI document (schemas/openapi/<service>.yaml) into `common.clients.generated`
by `make wiretypes` (tests/unit/common/test_wire_types_current.py keeps them current), and its
client is the only code that calls the service over HTTP.
They sit in `common` so the services stay independent of each other (see .importlinter).
"""
