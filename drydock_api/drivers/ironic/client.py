"""Drydock's calls to OpenStack Ironic through openstacksdk's baremetal proxy: each operation is
one Ironic API request (409 NodeLocked retried with bounded backoff) and, where asked, a bounded
wait for the state Ironic reports, stopping early on a failure state or maintenance."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import requests

from common.errors import Conflict
from common.jsontypes import JSON, JSONObject, as_object, member
from common.poll import NotYet, doubling, poll
from drydock_api.drivers.ironic import states as st
from drydock_api.drivers.ironic.states import IronicNode, from_sdk
from drydock_api.drivers.ports import BmcAccess, DriverError

if TYPE_CHECKING:  # openstacksdk is slow to import: only where Ironic is the provisioner
    from openstack.baremetal.v1._proxy import Proxy

API_VERSION = "1.61"  # `retired`/`retired_reason` (1.61), `automated_clean` (1.47)
# How long after its own timeout Ironic may take to report a power action's end (last_error
# or the state): its conductor thread, on a loaded machine, has taken more than 15 s.
REPORT_MARGIN = 60.0
LOCKED = "is locked by host"  # Ironic's NodeLocked message (409, like other conflicts)
INVENTORY_VERSION = "1.81"  # GET /v1/nodes/{node}/inventory
OS_DISK_STEP = "erase_devices_metadata"  # the agent's metadata-only erase (OS-disk mode)
FULL_ERASE_STEP = "erase_devices"  # the agent's full erase of every disk


class IronicError(DriverError):
    reason, title = "IronicError", "Ironic call failed"


class IronicStateError(IronicError):
    """Ironic reached a failure state, entered maintenance or did not get there in time."""

    reason, title = "IronicStateError", "Ironic node did not reach the state asked for"


class IronicRefused(Conflict):
    """Drydock asked for something Ironic cannot do on this node (nothing was changed)."""

    reason, title = "IronicRefused", "Ironic cannot do this"


@dataclass(frozen=True)
class IronicSettings:
    api_version: str = API_VERSION
    lock_retries: int = 8  # attempts after a 409 NodeLocked
    lock_backoff: float = 0.5  # first delay (s), doubled, capped at lock_backoff_max
    lock_backoff_max: float = 4.0
    poll: float = 0.5
    timeout: float = 300.0  # a wait for a provision state
    power_timeout: float = 60.0  # Ironic's own timeout of a power action (sent to it)
    kernel_url: str = ""  # the ramdisk deploy's boot files (instance_info kernel/ramdisk)
    ramdisk_url: str = ""


def connect(url: str, api_version: str = API_VERSION) -> Proxy:
    """openstacksdk's baremetal proxy for a standalone Ironic (no Keystone: auth_type none)."""
    import openstack  # slow to import: only where Ironic is the provisioner

    conn = openstack.connection.Connection(
        auth_type="none", auth={"endpoint": url}, baremetal_endpoint_override=f"{url}/v1",
        baremetal_api_version=api_version, baremetal_status_code_retries=0)
    proxy: Proxy = conn.baremetal
    return proxy


def driver_fields(bmc: BmcAccess) -> JSONObject:
    """Hardware type, driver_info and the BMC's own power/management interfaces."""
    if bmc.type == "redfish":
        system = bmc.system_id or ""
        return {"driver": "redfish", "power_interface": "redfish",
                "management_interface": "redfish", "inspect_interface": "redfish",
                "driver_info": {"redfish_address": f"http://{bmc.address}:{bmc.port}",
                                "redfish_system_id": system if system.startswith("/")
                                else f"/redfish/v1/Systems/{system}",
                                "redfish_username": bmc.account,
                                "redfish_password": bmc.credential}}
    if bmc.type == "ipmi":
        return {"driver": "ipmi", "power_interface": "ipmitool",
                "management_interface": "ipmitool",
                "driver_info": {"ipmi_address": bmc.address, "ipmi_port": bmc.port,
                                "ipmi_username": bmc.account, "ipmi_password": bmc.credential,
                                "ipmi_cipher_suite": 3}}
    raise IronicRefused(f"Ironic has no hardware type for oob type {bmc.type!r} "
                        "(redfish or ipmi)")


class IronicClient:
    """Ironic nodes by name (Drydock's hostname), each call bounded."""

    def __init__(self, proxy: Proxy, settings: IronicSettings | None = None, *,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.bm, self.settings = proxy, settings or IronicSettings()
        self._sleep, self._clock = sleep, clock
        self.lock_waits = 0  # 409 NodeLocked answers retried so far (observable in tests)

    # --- one request ----------------------------------------------------------------------
    def _request(self, method: str, path: str, body: JSON = None,
                 microversion: str | None = None) -> JSON:
        """One Ironic API request; a 409 NodeLocked is sent again after a doubling pause, at
        most `lock_retries` times, then fails (transient) with Ironic's message."""
        def send() -> JSON | NotYet[str]:
            response = self.bm.request(path, method, json=body,
                                       microversion=microversion or self.settings.api_version,
                                       raise_exc=False, retriable_status_codes=[])
            text = response.text or ""
            if response.status_code == 409 and LOCKED in text:
                return NotYet(text)
            return _answer(method, path, response, text)

        def locked(text: str) -> NoReturn:
            raise IronicError(f"{method} {path}: node still locked after "
                              f"{self.settings.lock_retries} retries: {_fault(text)}",
                              transient=True)

        def counted(_: str) -> None:
            self.lock_waits += 1

        return poll(send, interval=doubling(self.settings.lock_backoff,
                                            self.settings.lock_backoff_max),
                    attempts=self.settings.lock_retries + 1, expire=locked, between=counted,
                    clock=self._clock, sleep=self._sleep)

    def node(self, name: str) -> IronicNode | None:
        from openstack import exceptions

        try:
            return from_sdk(self.bm.get_node(name))
        except exceptions.NotFoundException:
            return None
        except exceptions.SDKException as exc:
            raise IronicError(f"reading node {name}: {exc}", transient=True) from exc

    def get(self, name: str) -> IronicNode:
        node = self.node(name)
        if node is None:
            raise IronicRefused(f"Ironic has no node {name}")
        return node

    def nodes(self) -> list[IronicNode]:
        from openstack import exceptions

        try:
            return [from_sdk(n) for n in self.bm.nodes(details=True)]
        except exceptions.SDKException as exc:
            raise IronicError(f"listing nodes: {exc}", transient=True) from exc

    def check(self) -> str:
        body = self._request("GET", "/")
        newest = as_object(as_object(body).get("version")).get("version", "?")
        return f"Ironic API {newest} (using {self.settings.api_version})"

    # --- enrollment and the provision state machine ---------------------------------------
    def enroll(self, name: str, bmc: BmcAccess, mac: str | None = None) -> IronicNode:
        """Create the node (or update the BMC of an existing one) with ipxe boot and ramdisk
        deploy (no agent needed), a port for its boot MAC; leaves it in `enroll`."""
        fields = driver_fields(bmc)
        existing = self.node(name)
        if existing is None:
            self._request("POST", "/nodes", {
                "name": name, **fields, "boot_interface": "ipxe",
                "deploy_interface": "ramdisk", "network_interface": "noop",
                "automated_clean": False,
                "instance_info": self._boot_files()})
        else:
            self._request("PATCH", f"/nodes/{name}", [
                {"op": "add", "path": "/driver_info", "value": fields["driver_info"]},
                *({"op": "add", "path": "/inspect_interface", "value": fields[key]}
                  for key in ("inspect_interface",) if key in fields)])
        node = self.get(name)
        if mac and not as_object(self._request("GET", f"/ports?address={mac}"))["ports"]:
            self._request("POST", "/ports", {"node_uuid": node.uuid, "address": mac})
        return node

    def _boot_files(self) -> JSONObject:
        info: JSONObject = {}
        if self.settings.kernel_url and self.settings.ramdisk_url:
            info = {"kernel": self.settings.kernel_url, "ramdisk": self.settings.ramdisk_url}
        return info

    def provision(self, name: str, target: str, *, reach: Iterable[str],
                  body: JSONObject | None = None, wait: bool = True) -> IronicNode:
        """PUT states/provision {target}; then wait until the provision state is in `reach`."""
        self._request("PUT", f"/nodes/{name}/states/provision", {"target": target, **(body or {})})
        return self.wait_provision(name, set(reach), doing=target) if wait else self.get(name)

    def manage(self, name: str) -> IronicNode:
        """enroll/available/failed → manageable (Ironic verifies the BMC on the way)."""
        node = self.get(name)
        if node.provision_state == st.MANAGEABLE:
            return node
        return self.provision(name, "manage", reach={st.MANAGEABLE})

    def provide(self, name: str) -> IronicNode:
        """manageable → available (automated cleaning runs first when enabled). Ironic
        refuses (400) a retired node, which stays manageable."""
        node = self.get(name)
        if node.provision_state == st.AVAILABLE:
            return node
        if node.provision_state != st.MANAGEABLE:
            self.manage(name)
        return self.provision(name, "provide", reach={st.AVAILABLE})

    def inspect(self, name: str) -> IronicNode:
        """manageable → inspecting → manageable: out-of-band inspection (the `redfish`
        inspect interface reads CPU, memory and disks from the BMC into the node's
        properties and inventory); `inspect failed` ends the wait with Ironic's cause."""
        self.manage(name)
        return self.provision(name, "inspect", reach={st.MANAGEABLE})

    def inventory(self, name: str) -> JSONObject | None:
        """The hardware inventory Ironic stored at the node's last inspection (None: never
        inspected: Ironic answers 404)."""
        try:
            body = self._request("GET", f"/nodes/{name}/inventory",
                                 microversion=INVENTORY_VERSION)
        except IronicRefused as exc:
            if "(404)" in exc.message:
                return None
            raise
        inventory = member(body, "inventory")
        return inventory if isinstance(inventory, dict) else None

    def deploy(self, name: str, *, wait: bool = True) -> IronicNode:
        """available → active with the ramdisk deploy (boots the boot files, powers on)."""
        return self.provision(name, "active", reach={st.ACTIVE}, wait=wait)

    def undeploy(self, name: str, erase: str | None = "full", *,
                 wait: bool = True) -> IronicNode:
        """active/deploy failed → (cleaning) → available; a retired node ends `manageable`.
        `erase` 'full' (erase_devices), 'os-disk' (erase_devices_metadata) or None (no
        cleaning). Refused, nothing changed, when the node cannot run the erase asked for."""
        node = self.get(name)
        self._check_erase(node, erase)
        want = erase is not None
        if node.automated_clean is not want:
            self._request("PATCH", f"/nodes/{name}", [
                {"op": "replace", "path": "/automated_clean", "value": want}])
        if node.provision_state in (st.AVAILABLE, st.MANAGEABLE) and not want:
            return self._settle_retired(node)
        if node.provision_state in (st.AVAILABLE, st.MANAGEABLE):  # wipe an idle node
            self.manage(name)
            step = FULL_ERASE_STEP if erase == "full" else OS_DISK_STEP
            self.provision(name, "clean", reach={st.MANAGEABLE},
                           body={"clean_steps": [{"interface": "deploy", "step": step}]},
                           wait=wait)
            return self._settle_retired(self.get(name))
        done = self.provision(name, "deleted", reach={st.AVAILABLE, st.MANAGEABLE}, wait=wait)
        return self._settle_retired(done) if wait else done

    def _check_erase(self, node: IronicNode, erase: str | None) -> None:
        if erase not in (None, "full", "os-disk"):
            raise IronicRefused(f"erase {erase!r}: expected 'full', 'os-disk' or none")
        if erase is not None and not node.has_agent_ramdisk:
            step = FULL_ERASE_STEP if erase == "full" else OS_DISK_STEP
            raise IronicRefused(
                f"Ironic cannot erase {node.name}: {step} is a clean step of the Ironic Python "
                f"Agent, and the node has no agent ramdisk (driver_info deploy_kernel/"
                f"deploy_ramdisk; deploy interface {node.deploy_interface!r}). Tear it down "
                "without erase, or give the node an agent ramdisk")

    def _settle_retired(self, node: IronicNode) -> IronicNode:
        """A retired node that ends `available` (cleaning skipped) is moved to `manageable`,
        where Ironic keeps retired nodes after teardown."""
        if node.retired and node.provision_state == st.AVAILABLE:
            return self.provision(node.name, "manage", reach={st.MANAGEABLE})
        return node

    def retire(self, name: str, reason: str | None) -> IronicNode:
        """PATCH retired=true, retired_reason; Ironic refuses (409) an `available` node."""
        self._request("PATCH", f"/nodes/{name}", [
            {"op": "add", "path": "/retired", "value": True},
            {"op": "add", "path": "/retired_reason", "value": reason}])
        return self.get(name)

    def unretire(self, name: str) -> IronicNode:
        self._request("PATCH", f"/nodes/{name}", [
            {"op": "add", "path": "/retired", "value": False},
            {"op": "remove", "path": "/retired_reason"}])
        return self.get(name)

    def set_instance(self, name: str, instance: str | None) -> IronicNode:
        """Reserve an available node for Drydock (instance_uuid) or clear it."""
        op: JSONObject = ({"op": "add", "path": "/instance_uuid", "value": instance} if instance
                          else {"op": "remove", "path": "/instance_uuid"})
        self._request("PATCH", f"/nodes/{name}", [op])
        return self.get(name)

    def delete(self, name: str) -> None:
        if self.node(name) is not None:
            self._request("DELETE", f"/nodes/{name}")

    # --- power ----------------------------------------------------------------------------
    def power(self, name: str, target: str, *, wait: bool = True,
              timeout: float | None = None) -> IronicNode:
        """PUT states/power {target, timeout}: 'power on', 'power off', 'soft power off',
        'rebooting', 'soft rebooting'. Ironic's timeout bounds its own wait for the BMC (a
        soft power off it could not finish in time fails with last_error)."""
        server_timeout = int(timeout or self.settings.power_timeout)
        body: JSONObject = {"target": target}
        if target in (st.SOFT_POWER_OFF, st.SOFT_REBOOT, st.POWER_OFF, st.POWER_ON, st.REBOOT):
            body["timeout"] = server_timeout
        self._request("PUT", f"/nodes/{name}/states/power", body)
        if not wait:
            return self.get(name)
        final = st.POWER_OFF if target in (st.POWER_OFF, st.SOFT_POWER_OFF) else st.POWER_ON
        return self.wait_power(name, final, server_timeout + REPORT_MARGIN)

    def wait_power(self, name: str, state: str, timeout: float) -> IronicNode:
        """Poll until the power state is `state` with no target left; Ironic's last_error
        once it has stopped elsewhere, or the deadline, ends the wait."""
        def reached() -> IronicNode | NotYet[IronicNode]:
            node = self.get(name)
            if node.target_power_state is None and node.power_state == state:
                return node
            if node.target_power_state is None and node.last_error:
                raise IronicStateError(f"{name}: power {state!r} not reached: "
                                       f"{node.last_error}")
            return NotYet(node)

        def late(node: IronicNode) -> IronicNode:
            raise IronicStateError(f"{name}: power {state!r} not reached in "
                                   f"{timeout:.0f}s ({node.power_state})", transient=True)

        return poll(reached, deadline=self._clock() + timeout, interval=self.settings.poll,
                    expire=late, clock=self._clock, sleep=self._sleep)

    def wait_provision(self, name: str, reach: set[str], *, doing: str = "",
                       timeout: float | None = None) -> IronicNode:
        """Poll until the provision state is one of `reach` with no target left; a failure
        state, maintenance or the deadline ends the wait with Ironic's last_error."""
        limit = timeout if timeout is not None else self.settings.timeout
        fallback = {st.FALLS_BACK_TO[state] for state in reach if state in st.FALLS_BACK_TO}

        def reached() -> IronicNode | NotYet[IronicNode]:
            node = self.get(name)
            if node.provision_state in reach and not node.target_provision_state:
                return node
            if node.failed or node.maintenance:
                raise IronicStateError(f"{name}: {doing or 'transition'} stopped: "
                                       f"{node.cause()}")
            if fallback and node.provision_state in fallback and not node.target_provision_state:
                # a BMC that did not answer in time fails it too: asking again may pass
                raise IronicStateError(f"{name}: {doing or 'transition'} failed, back in "
                                       f"{node.cause()}", transient=True)
            return NotYet(node)

        def late(node: IronicNode) -> IronicNode:
            raise IronicStateError(f"{name}: {doing or 'transition'} did not reach "
                                   f"{'/'.join(sorted(reach))} in {limit:.0f}s: "
                                   f"{node.cause()}", transient=True)

        return poll(reached, deadline=self._clock() + limit, interval=self.settings.poll,
                    expire=late, clock=self._clock, sleep=self._sleep)


def _answer(method: str, path: str, response: requests.Response, text: str) -> JSON:
    """Ironic's JSON answer; IronicRefused for what it will not do to this node (400, 404,
    406, another 409), IronicError (transient on a 5xx) for the rest."""
    from openstack import exceptions

    if response.status_code in (400, 404, 406, 409):
        raise IronicRefused(f"Ironic refused {method} {path} "
                            f"({response.status_code}): {_fault(text)}")
    try:
        exceptions.raise_from_response(response)
    except exceptions.SDKException as exc:
        raise IronicError(f"{method} {path}: {exc}",
                          transient=response.status_code >= 500) from exc
    answer: JSON = response.json() if text.strip() else None
    return answer

def _fault(text: str) -> str:
    """Ironic's faultstring out of its error body (JSON inside JSON), else the text."""
    import json

    try:
        body = json.loads(text)
        inner = body.get("error_message", body)
        if isinstance(inner, str):
            inner = json.loads(inner)
        return str(inner.get("faultstring") or text)
    except (ValueError, AttributeError):
        return text[:300]
