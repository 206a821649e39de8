"""Simulated BMCs: Redfish (sushy-tools emulator), IPMI (pyghmi and OpenIPMI ipmi_sim)."""
