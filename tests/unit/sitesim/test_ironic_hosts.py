"""An Ironic site's host boots the iPXE script Ironic wrote for its MAC: its boot action key
(a tag) and Drydock's boot action API (the user data) come from the kernel command line, once
per deploy; Drydock's Ironic provisioner writes them as the ramdisk deploy's arguments."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from drydock_api.drivers.ironic.provisioner import boot_arguments
from sitesim.ironic.hosts import IronicHosts, kernel_arguments

MAC = "52:54:00:00:00:04"


class Model:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def record_call(self, system: str, op: str, node: str) -> None:
        self.calls.append((system, op, node))


def user_data(api: str) -> str:
    text = ("#cloud-config\nwrite_files:\n- path: /etc/drydock/bootaction-api\n"
            f"  content: {api}\n")
    return base64.b64encode(text.encode()).decode()


def script(args: str) -> str:
    return ("#!ipxe\n:boot_ramdisk\nimgfree\nkernel http://127.0.0.1/kernel root=/dev/ram0 "
            f"text {args} initrd=ramdisk || goto boot_ramdisk\nboot\n")


def hosts(tmp_path: Path) -> tuple[IronicHosts, list[tuple[Any, ...]], Model]:
    model = Model()
    found = IronicHosts(model, tmp_path, {"node04": MAC})  # type: ignore[arg-type]
    booted: list[tuple[Any, ...]] = []
    found.host.boot = lambda *a: booted.append(a)  # type: ignore[method-assign]
    return found, booted, model


def test_the_host_boots_once_per_script_with_the_key_and_api_drydock_wrote(
        tmp_path: Path) -> None:
    args = boot_arguments(["other", "node04__baid__k3y"], user_data("http://dd/api/v1.0"))
    assert kernel_arguments(script(args))["berth.tags"] == "other,node04__baid__k3y"
    (tmp_path / "pxelinux.cfg").mkdir()
    (tmp_path / "pxelinux.cfg" / MAC.replace(":", "-")).write_text(script(args))
    found, booted, model = hosts(tmp_path)
    found.on_power("node04", False)
    found.on_power("node04", True)
    found.on_power("node04", True)  # the same deploy powered on again: no second first boot
    assert booted == [("node04", "k3y", "http://dd/api/v1.0")]
    assert model.calls == [("host", "ipxe_boot", "node04")]


def test_a_node_without_an_ipxe_script_or_boot_actions_boots_nothing(tmp_path: Path) -> None:
    found, booted, _ = hosts(tmp_path)
    found.on_power("node04", True)  # adopted, never deployed by Ironic: no script
    (tmp_path / "pxelinux.cfg").mkdir()
    (tmp_path / "pxelinux.cfg" / MAC.replace(":", "-")).write_text(script(boot_arguments([], None)))
    found.on_power("node04", True)
    assert booted == []
