"""A site file chooses its provisioner (maas by default, or ironic); anything else is refused
with the problem named, and the launcher hands Drydock the site's Ironic."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from berth_launcher.berthconfig import service_sections
from sitesim.siteconfig import SiteConfigError, load_site, parse_site

ROOT = Path(__file__).resolve().parents[3]


def minimal(**extra: object) -> dict[str, object]:
    node = {"name": "n1", "rack": "r1", "bmc": {"type": "redfish"}}
    return {"site": "s", "nodes": [node], **extra}


def test_maas_is_the_default_and_the_ironic_demo_site_chooses_ironic() -> None:
    assert parse_site(minimal()).provisioner == "maas"
    assert load_site(ROOT / "etc" / "sites" / "ironic-demo.yaml").provisioner == "ironic"


def test_an_unknown_provisioner_is_refused() -> None:
    with pytest.raises(SiteConfigError) as caught:
        parse_site(minimal(provisioner="xcat"))
    assert "provisioner: must be one of maas, ironic" in str(caught.value)


def test_drydock_gets_the_sites_ironic_only_when_it_runs_one(tmp_path: Path) -> None:
    facts = {"maas": "http://m", "maas_api_key": "a:b:c", "berth_dir": str(tmp_path),
             "ironic": "http://127.0.0.1:6385", "ironic_kernel": "file:///k",
             "ironic_ramdisk": "file:///r"}
    sections = service_sections("drydock", tmp_path, "t", facts, {"drydock": 9000})
    assert sections["ironic"]["url"] == "http://127.0.0.1:6385"
    assert sections["ironic"]["kernel_url"] == "file:///k"
    del facts["ironic"]
    assert service_sections("drydock", tmp_path, "t", facts, {"drydock": 9000})["ironic"][
        "url"] == ""
    assert yaml.safe_load((ROOT / "etc" / "sites" / "ironic-demo.yaml").read_text())[
        "provisioner"] == "ironic"
