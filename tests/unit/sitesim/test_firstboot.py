"""The simulated host's first boot: what Drydock handed over, and reading a join script."""

from __future__ import annotations

import base64

import pytest
import yaml

from promenade_api.joinscript import parse_request, render_script
from sitesim.firstboot import JoinFailed, handed_over, join_steps, parse_env, parse_unit


def script() -> str:
    request, _ = parse_request({"design_ref": "file:///d.yaml", "hostname": "node05",
                                "ip": "10.0.0.15", "labels.dynamic": "rack=r1"})
    assert request is not None
    return render_script(request)


def test_the_key_comes_from_the_maas_tag_and_the_api_from_the_user_data():
    data = "#cloud-config\n" + yaml.safe_dump({"write_files": [
        {"path": "/etc/drydock/bootaction-api", "content": "http://dd/api/v1.0/bootactions/\n"}]})
    user_data = base64.b64encode(data.encode()).decode()
    assert handed_over(["compute", "node05__baid__abc"], user_data, "node05") == (
        "abc", "http://dd/api/v1.0/bootactions/")
    assert handed_over(["node04__baid__abc"], user_data, "node05") is None
    assert handed_over(["node05__baid__abc"], "", "node05") is None


def test_a_promenade_join_script_reads_as_its_steps():
    assert join_steps(script()) == [
        ["join_register_node", "node05", "10.0.0.15", "local", "127.0.0.1"],
        ["join_label", "dynamic", "rack=r1"], ["join_start_kubelet"], ["join_done"]]


@pytest.mark.parametrize("broken,why", [
    (lambda s: s.rstrip()[:-len("join_done")], "cut short"),
    (lambda s: s.replace("join_start_kubelet", "rm -rf /"), "unknown step 'rm'"),
    (lambda s: "#!/bin/sh\necho hi\n", "no steps marker"),
])
def test_a_broken_script_is_refused_with_its_cause(broken, why):
    with pytest.raises(JoinFailed, match=why):
        join_steps(broken(script()))


def test_units_and_environment_files_are_read_as_systemd_does():
    unit = parse_unit("/lib/systemd/system/promjoin.service",
                      "[Service]\nEnvironmentFile=-/etc/x.env\nExecStart=/opt/promjoin.sh\n"
                      "ExecStartPost=/bin/true\n")
    assert (unit.exec_start, unit.environment_file) == ("/opt/promjoin.sh", "/etc/x.env")
    assert parse_env("# c\nA=1\nB='x y'\n") == {"A": "1", "B": "x y"}
