"""The sample configs and policies in etc/ are what the generators produce from the code."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize("service", ["shipyard", "promenade", "drydock"])
@pytest.mark.parametrize("tool,generator,sample", [
    ("oslo-config-generator", "config-generator.conf", "{svc}.conf.sample"),
    ("oslopolicy-sample-generator", "policy-generator.conf", "policy.yaml.sample"),
])
def test_sample_is_current(service, tool, generator, sample, tmp_path):
    committed = ROOT / "etc" / service / sample.format(svc=service)
    out = tmp_path / committed.name
    subprocess.run([str(BIN / tool), "--config-file", str(ROOT / "etc" / service / generator),
                    "--output-file", str(out)], check=True, cwd=ROOT, capture_output=True)
    assert out.read_text() == committed.read_text(), (
        f"{committed.relative_to(ROOT)} is stale: run `tox -e genconfig` / `tox -e genpolicy`")
