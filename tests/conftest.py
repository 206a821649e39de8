"""Shared pytest configuration: fixture plugins of the simulated site and services."""

import importlib.util

pytest_plugins = ["tests.support.ci_skips"] + [
    name for name in ("tests.fixtures.site", "tests.fixtures.postgres", "tests.fixtures.keystone",
                 "tests.fixtures.services")
    if importlib.util.find_spec(name) is not None
]

