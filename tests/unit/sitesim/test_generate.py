"""Generated sites: a large one keeps Kubernetes' own node heartbeat timings."""

from __future__ import annotations

from sitesim.generate import LARGE_SITE, generate_site
from sitesim.siteconfig import parse_site


def test_large_generated_site_uses_kubernetes_default_node_timings() -> None:
    spec = parse_site(generate_site(LARGE_SITE, 10, 3))
    assert dict(spec.timings.kube) == {"node_lease_duration_s": 40, "node_monitor_period_s": 5,
                                       "node_monitor_grace_period_s": 50}


def test_small_generated_site_keeps_the_sites_short_node_timings() -> None:
    spec = parse_site(generate_site(LARGE_SITE - 1, 10, 3))
    assert dict(spec.timings.kube) == {}
