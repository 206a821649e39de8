"""Site YAML validation, generated sites and the `sitesim` command."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from sitesim.cli import main as sitesim_cli
from sitesim.generate import generate_site
from sitesim.site import Site
from sitesim.siteconfig import SiteConfigError, load_site, parse_site

ROOT = Path(__file__).resolve().parents[3]


def test_demo_site_has_the_racks_bmcs_disks_and_etcd_of_the_issue():
    spec = load_site(ROOT / "etc/sites/demo.yaml")
    assert [(n.name, n.rack, n.tags) for n in spec.nodes] == [
        ("node01", "rack01", ("control",)), ("node02", "rack01", ("control",)),
        ("node03", "rack01", ("control",)), ("node04", "rack02", ("compute",)),
        ("node05", "rack02", ("compute",)), ("node06", "rack02", ("compute",))]
    kinds = {n.name: (n.bmc.type, n.bmc.impl) for n in spec.nodes}
    assert [n for n, k in kinds.items() if k[0] == "redfish"] == ["node01", "node02", "node04",
                                                                 "node05"]
    assert {kinds["node03"][1], kinds["node06"][1]} == {"ipmi_sim", "pyghmi"}
    for node in spec.nodes:
        assert [d.name for d in node.disks] == ["sda", "sdb"]
        assert [d.name for d in node.disks if d.is_os_disk] == ["sda"]
    (etcd,) = spec.etcd
    assert (etcd.name, etcd.members, etcd.minimum_healthy_members) == (
        "kubernetes", ("node01", "node02", "node03"), 2)


def test_malformed_site_lists_every_problem():
    raw = {
        "site": "Bad Name", "colour": "blue",
        "nodes": [
            {"name": "n1", "rack": "r1", "bmc": {"type": "serial"}},
            {"name": "n1", "bmc": {"type": "ipmi", "impl": "virtualbmc"}},
            {"name": "UPPER", "rack": "r1"},
            {"name": "n3", "rack": "r1", "disks": [{"name": "sda", "partitions": []}]},
        ],
        "etcd": {"clusters": [{"name": "k", "members": ["n1", "ghost"],
                               "minimum_healthy_members": 5}]},
        "faults": [{"node": "n1", "operation": "maas.melt", "effect": "fail"}],
        "timings": {"deploy": -1, "warp": 2}, "kubernetes": "no",
    }
    with pytest.raises(SiteConfigError) as caught:
        parse_site(raw)
    problems = "\n".join(caught.value.problems)
    for expected in ("site:", "unknown key 'colour'", "bmc.type must be redfish or ipmi",
                     "duplicate node name 'n1'", "rack is required", "bmc.impl must be",
                     "lowercase DNS label", "exactly one disk", "member 'ghost' is not a node",
                     "minimum_healthy_members", "operation: must be one of",
                     "timings.deploy", "unknown key 'warp'", "kubernetes: must be true or false"):
        assert expected in problems, expected
    assert len(caught.value.problems) >= 14


def test_invalid_site_starts_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("site: x\nnodes: []\n")
    with pytest.raises(SiteConfigError):
        Site.from_file(bad)


def test_not_yaml_is_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("site: [unclosed\n")
    with pytest.raises(SiteConfigError, match="not valid YAML"):
        load_site(bad)


def test_generated_site_is_valid_and_sized():
    spec = parse_site(generate_site(120, 7, 5))
    assert len(spec.nodes) == 120
    assert len({n.rack for n in spec.nodes}) == 7
    assert spec.etcd[0].members == tuple(n.name for n in spec.nodes[:5])
    assert sum(n.bmc.type == "ipmi" for n in spec.nodes) == 12


def test_cli_generate_and_check(tmp_path):
    out = tmp_path / "big.yaml"
    runner = CliRunner()
    result = runner.invoke(sitesim_cli, ["generate", "--nodes", "30", "--racks", "3",
                                         "--etcd-members", "3", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(yaml.safe_load(out.read_text())["nodes"]) == 30
    assert runner.invoke(sitesim_cli, ["check", str(out)]).exit_code == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("site: x\n")
    result = runner.invoke(sitesim_cli, ["check", str(bad)])
    assert result.exit_code != 0 and "nodes:" in result.output
    result = runner.invoke(sitesim_cli, ["generate", "--nodes", "2", "--etcd-members", "3"])
    assert result.exit_code != 0


def test_kube_timings_are_checked_and_every_problem_listed():
    raw = yaml.safe_load((ROOT / "etc/sites/demo.yaml").read_text())
    raw["timings"] = {"kube": {"node_monitor_grace_period_s": 10, "pod_termination_delay": 1,
                               "kubelet_shutdown_delay": -1}}
    with pytest.raises(SiteConfigError) as caught:
        parse_site(raw)
    text = str(caught.value)
    assert "unknown key 'pod_termination_delay'" in text
    assert "timings.kube.kubelet_shutdown_delay: must be a number >= 0" in text
    raw["timings"] = {"kube": {"node_monitor_grace_period_s": 10}}
    assert parse_site(raw).timings.kube == {"node_monitor_grace_period_s": 10.0}
