"""Redfish BMC driver over sushy."""
