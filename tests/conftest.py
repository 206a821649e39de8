"""Shared pytest configuration: fixture plugins of the simulated site and services, and the
order the suite runs in (longest modules first, so parallel workers finish together)."""

import importlib.util
import os

import pytest

from sitesim.ports import RANGE_ENV
from tests.support import lanes

pytest_plugins = ["tests.support.ci_skips"] + [
    name for name in ("tests.fixtures.site", "tests.fixtures.postgres", "tests.fixtures.keystone",
                 "tests.fixtures.services", "tests.fixtures.ironic")
    if importlib.util.find_spec(name) is not None
]

# Path prefixes of the longest-running modules, longest first (as measured in a full run):
# `make test` runs the suite on several workers (pytest-xdist, one module per worker at a time,
# at most two of the site modules at once: tests/support/lanes.py), and a long module handed
# out last would leave the other workers idle at the end.
LONG_FIRST = (
    "tests/e2e/test_deploy_site.py",
    "tests/e2e/test_ironic_redeploy.py",
    "tests/e2e/test_replace_failed_server.py",
    "tests/integration/services/test_schemathesis.py",
    "tests/e2e/test_redeploy_server.py",
    "tests/integration/ironic/test_ironic_client.py",
    "tests/e2e/test_postgres_layout.py",
    "tests/image/",
    "tests/integration/sitesim/test_up.py",
    "tests/e2e/test_failure_domain_budgets.py",
    "tests/e2e/",
    "tests/integration/ironic/",
    "tests/integration/",
)


def _rank(item: pytest.Item) -> int:
    path = item.nodeid
    return next((i for i, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)),
                len(LONG_FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: the order inside a module stays as written


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    return lanes.make_scheduler(config, log)


def pytest_configure(config: pytest.Config) -> None:
    """A parallel worker (gw0, gw1, ...) chooses its free ports, and so do the processes it
    starts, in a range of its own below the ephemeral range: two workers never pick one port."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        size = 22000 // max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
        low = 10000 + int(worker[2:]) * size
        os.environ[RANGE_ENV] = f"{low}-{low + size - 1}"
