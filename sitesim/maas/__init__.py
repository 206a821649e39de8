"""MAAS 2.0 API simulator: machines, their statuses, power and storage, behind OAuth1."""
