"""Drydock's second provisioner: OpenStack Ironic, driven through openstacksdk."""
