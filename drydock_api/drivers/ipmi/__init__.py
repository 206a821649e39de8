"""IPMI BMC driver over ipmitool (lanplus) in a subprocess."""
