"""IPMI BMC driver over pyghmi."""
