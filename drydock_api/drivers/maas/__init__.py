"""MAAS 2.0 API driver (Provisioner) and its fake."""
