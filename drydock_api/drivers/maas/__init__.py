"""MAAS 2.0 API driver (NodeDriver) and its fake."""
