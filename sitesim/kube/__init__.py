"""The simulated site's real Kubernetes: build of the binaries and the control plane on loopback."""
