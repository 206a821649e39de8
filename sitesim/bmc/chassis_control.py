"""The `chassis_control` program of an OpenIPMI ipmi_sim BMC: power and boot via the admin API.

ipmi_sim runs `PROGRAM <mc> get <name>...` (print `name:value` lines) and
`PROGRAM <mc> set <name> <value>`; this forwards both to sitesim's admin API, which reads and
sets the site model (faults and call counts included).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any

from common.urlpath import node_path

SET_OPS = {("power", "0"): "power_off", ("power", "1"): "power_on",
           ("shutdown", "1"): "graceful_shutdown", ("reset", "1"): "power_reset"}
BOOT_FROM_SIM = {"pxe": "pxe", "default": "hdd", "cdrom": "cd", "bios": "biossetup"}
BOOT_TO_SIM = {v: k for k, v in BOOT_FROM_SIM.items()}


def call(url: str, node: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        node_path(f"{url}/nodes", node, "/bmc/ipmi"), data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        result: dict[str, Any] = json.loads(reply.read() or b"{}")
        return result


def run(url: str, node: str, verb: str, args: list[str]) -> list[str]:
    out = []
    if verb == "get":
        for name in args:
            if name == "power":
                state = call(url, node, {"op": "get_power_state"})
                out.append(f"power:{1 if state['power'] == 'on' else 0}")
            elif name == "boot":
                state = call(url, node, {"op": "get_boot"})
                out.append(f"boot:{BOOT_TO_SIM.get(state['device'], 'default')}")
    elif verb == "set":
        for name, value in zip(args[::2], args[1::2], strict=False):
            if name == "boot":
                call(url, node, {"op": "set_boot", "device": BOOT_FROM_SIM.get(value, value)})
            elif (name, value) in SET_OPS:
                call(url, node, {"op": SET_OPS[(name, value)]})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("mc")
    parser.add_argument("verb")
    parser.add_argument("names", nargs="*")
    opts = parser.parse_args(argv)
    try:
        for line in run(opts.url, opts.node, opts.verb, opts.names):
            print(line)
    except (urllib.error.URLError, OSError, KeyError, ValueError) as exc:
        print(f"chassis_control: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
