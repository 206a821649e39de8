"""IPMI in Drydock: pyghmi in-process against ipmitool in a subprocess, on latency and on loss.

Starts the site's IPMI BMCs in a child process (sitesim's pyghmi BMC and an OpenIPMI ipmi_sim
BMC, both behind sitesim's admin API and site model, without Kubernetes or MAAS), then for each
client and BMC measures `power status` / `power off` / `power on`: median and p95 latency with
no loss, and through a UDP proxy that drops a share of the datagrams in both directions
(`--loss 10,30`): success rate, time per call, and calls that hang (still running after
`--hang` seconds). Three clients: pyghmi, bare ipmitool, and Drydock's driver (ipmitool with
its timeout and reruns). pyghmi is driven through the IpmiDriver class given by `--pyghmi`
(default: the pyghmi driver in bench/ipmi_pyghmi_driver.py when present, else Drydock's
driver); ipmitool as `ipmitool -I lanplus -R R -N N -E chassis power ...` with the password
in the environment.

    .venv/bin/python bench/ipmi_compare.py [--calls 20] [--loss-calls 15] [--loss 10,30]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sitesim.bmc.lossy import LossyProxy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SITE = """site: ipmi-bench
region: ipmi-bench-region
defaults:
  state: deployed
  bmc: {user: admin, password: bench-bmc-pw}
timings: {power: 0.01, graceful_shutdown: 0.01}
nodes:
  - {name: pg-a, rack: rack01, bmc: {type: ipmi, impl: pyghmi}}
  - {name: sim-a, rack: rack01, bmc: {type: ipmi, impl: ipmi_sim}}
workloads: false
"""
OPS = ("status", "off", "on")


def serve_bmcs() -> None:
    """Child mode: the site's IPMI BMCs and admin API; prints their ports, runs until stdin
    closes."""
    import yaml

    from sitesim.admin import AdminApp
    from sitesim.site import Site
    from sitesim.siteconfig import parse_site

    site = Site(parse_site(yaml.safe_load(SITE), source="ipmi-bench"))
    site._stops.append(site.scheduler.stop)
    site._serve("sitesim", AdminApp(site.model, site.info), 0)
    site._start_bmcs()
    print(json.dumps({"ports": site.ipmi_ports, "user": "admin",
                      "password": "bench-bmc-pw"}), flush=True)
    try:
        sys.stdin.read()
    finally:
        site.stop()


@dataclass
class Result:
    times: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    hangs: int = 0

    def add(self, seconds: float, error: str | None) -> None:
        self.times.append(seconds)
        if error:
            self.failures.append(error)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(fn: Callable[[], Any], hang: float) -> tuple[float, str | None, bool]:
    """Run fn in a thread: (seconds, error or None, hung)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            fn()
        except Exception as exc:  # every failure is a result here
            box["error"] = f"{type(exc).__name__}: {exc}"

    start = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(hang)
    took = time.monotonic() - start
    if worker.is_alive():
        return took, "hang", True
    return took, box.get("error"), False


class PyghmiClient:
    name = "pyghmi"

    def __init__(self, module: str) -> None:
        from drydock_api.drivers.ports import BmcAccess
        self._access = BmcAccess
        self.driver = importlib.import_module(module).IpmiDriver()

    def call(self, op: str, port: int, user: str, password: str) -> None:
        bmc = self._access("ipmi", "127.0.0.1", port, user, password)
        if op == "status":
            self.driver.power_state(bmc)
        elif op == "off":
            self.driver.power_off(bmc, graceful=False)
        else:
            self.driver.power_on(bmc)


class DrydockClient(PyghmiClient):
    """Drydock's driver as shipped (ipmitool, its timeout and reruns)."""

    name = "drydock (ipmitool driver)"

    def __init__(self) -> None:
        from drydock_api.drivers.ipmi.driver import IpmiDriver
        from drydock_api.drivers.ports import BmcAccess
        self._access = BmcAccess
        self.driver = IpmiDriver(timeout=30)


class IpmitoolClient:
    name = "ipmitool"

    def __init__(self, retries: int, timeout: int, cipher: int) -> None:
        self.retries, self.timeout, self.cipher = retries, timeout, cipher

    def call(self, op: str, port: int, user: str, password: str) -> None:
        argv = ["ipmitool", "-I", "lanplus", "-H", "127.0.0.1", "-p", str(port), "-U", user,
                "-E", "-C", str(self.cipher), "-R", str(self.retries), "-N", str(self.timeout),
                "chassis", "power", op]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "IPMI_PASSWORD": password})
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1:] or done.returncode)


def measure(client: Any, port: int, user: str, password: str, calls: int,
            hang: float) -> dict[str, Result]:
    out = {op: Result() for op in OPS}
    for i in range(calls * len(OPS)):
        op = OPS[i % len(OPS)]
        took, error, hung = timed(lambda op=op: client.call(op, port, user, password), hang)
        out[op].add(took, error)
        out[op].hangs += hung
        if hung:
            break
    return out


def report(label: str, results: dict[str, Result]) -> str:
    parts = []
    for op, res in results.items():
        if not res.times:
            continue
        ok = len(res.times) - len(res.failures)
        parts.append(f"{op} ok {ok}/{len(res.times)} median {statistics.median(res.times):.3f}s"
                     f" p95 {pct(res.times, 0.95):.3f}s max {max(res.times):.3f}s"
                     + (f" hangs {res.hangs}" if res.hangs else ""))
    return f"{label:<34} " + " | ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=20, help="calls of each op without loss")
    parser.add_argument("--loss-calls", type=int, default=10, help="calls of each op per loss")
    parser.add_argument("--loss", default="10,30", help="percentages of datagrams dropped")
    parser.add_argument("--hang", type=float, default=90.0, help="a call longer is a hang")
    parser.add_argument("--retries", type=int, default=3, help="ipmitool -R")
    parser.add_argument("--timeout", type=int, default=1, help="ipmitool -N (s)")
    parser.add_argument("--cipher", type=int, default=3, help="ipmitool -C (cipher suite)")
    parser.add_argument("--pyghmi", default="", help="module with the pyghmi IpmiDriver")
    parser.add_argument("--clients", default="pyghmi,ipmitool,drydock",
                        help="pyghmi (the previous driver), ipmitool (bare), drydock (the driver)")
    args = parser.parse_args()
    if args.serve:
        serve_bmcs()
        return
    module = args.pyghmi or ("bench.ipmi_pyghmi_driver"
                             if (ROOT / "bench" / "ipmi_pyghmi_driver.py").exists()
                             else "drydock_api.drivers.ipmi.driver")
    with tempfile.TemporaryDirectory(prefix="ipmi-bench-"):
        child = subprocess.Popen([sys.executable, __file__, "--serve"], cwd=ROOT,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout is not None
            info = json.loads(child.stdout.readline())
            run(args, module, info)
        finally:
            if child.stdin:
                child.stdin.close()
            child.wait(30)


def run(args: argparse.Namespace, module: str, info: dict[str, Any]) -> None:
    user, password = info["user"], info["password"]
    bmcs = {"pyghmi BMC": info["ports"]["pg-a"], "ipmi_sim": info["ports"]["sim-a"]}
    clients: list[Any] = []
    for name in args.clients.split(","):
        clients.append(PyghmiClient(module) if name == "pyghmi" else DrydockClient()
                       if name == "drydock"
                       else IpmitoolClient(args.retries, args.timeout, args.cipher))
    print(f"pyghmi driver: {module}; ipmitool -C {args.cipher} -R {args.retries} "
          f"-N {args.timeout}; "
          f"calls per op {args.calls} (no loss), {args.loss_calls} (each loss)")
    for client in clients:
        for bmc, port in bmcs.items():
            print(report(f"{client.name} -> {bmc}, no loss",
                         measure(client, port, user, password, args.calls, args.hang)),
                  flush=True)
    for loss in [int(x) for x in args.loss.split(",") if x]:
        for client in clients:
            for bmc, port in bmcs.items():
                proxy = LossyProxy(("127.0.0.1", port), loss / 100)
                try:
                    res = measure(client, proxy.port, user, password, args.loss_calls,
                                  args.hang)
                finally:
                    proxy.close()
                print(report(f"{client.name} -> {bmc}, {loss}% loss", res)
                      + f" (dropped {proxy.dropped}/{proxy.sent})", flush=True)
                for op, r in res.items():
                    for failure in sorted(set(r.failures))[:2]:
                        print(f"    {op} failed: {failure[:150]}")


if __name__ == "__main__":
    main()
