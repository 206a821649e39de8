"""etcd access (one port over python3-etcd3, with a fake) and quorum-safe member removal."""
