"""Provisioner over the MAAS 2.0 REST API: requests + OAuth1 PLAINTEXT, bounded retries."""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable

import requests
from oauthlib.oauth1 import SIGNATURE_PLAINTEXT
from requests_oauthlib import OAuth1

from common.httpclient import PeerRetry, retrying_session
from common.jsontypes import JSON, JSONObject, as_int, as_list, as_object, as_str, member
from drydock_api.drivers.maas.listing import ArrayItems, NotWholeJson
from drydock_api.drivers.ports import (
    BlockDevice,
    MaasError,
    Machine,
    PartitionInfo,
    ScriptResult,
)

RETRY_CODES = frozenset({502, 503, 504})
SAFE = frozenset({"GET", "DELETE"})
CHUNK = 64 * 1024


def oauth_from_key(api_key: str) -> OAuth1:
    """OAuth1 PLAINTEXT auth from a MAAS API key `consumer:token:secret`."""
    parts = api_key.split(":")
    if len(parts) != 3 or not all(parts):
        raise MaasError("The MAAS API key must be 'consumer:token:secret'")
    consumer, token, secret = parts
    return OAuth1(consumer, client_secret="", resource_owner_key=token,
                  resource_owner_secret=secret, signature_method=SIGNATURE_PLAINTEXT,
                  signature_type="auth_header")


def _int_or_none(value: JSON) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def to_machine(machine: JSON) -> Machine:
    body = as_object(machine)
    boot = as_object(body.get("boot_interface"))
    links = as_list(boot.get("links"))
    first = as_object(links[0]) if links else {}
    return Machine(system_id=str(body["system_id"]), hostname=str(body.get("hostname")),
                   status_name=str(body.get("status_name")),
                   power_state=as_str(body.get("power_state")),
                   status_message=as_str(body.get("status_message")),
                   mac=as_str(boot.get("mac_address")),
                   cpu_count=_int_or_none(body.get("cpu_count")),
                   memory=_int_or_none(body.get("memory")),
                   boot_ip=as_str(first.get("ip_address")) or None)


def to_script_result(body: JSONObject) -> ScriptResult:
    """A commissioning result; its base64 `data` decoded (undecodable: replaced characters)."""
    try:
        output = base64.b64decode(str(body.get("data") or "")).decode("utf-8", "replace")
    except (ValueError, binascii.Error):
        output = ""
    status = body.get("script_result")
    return ScriptResult(name=str(body.get("name")),
                        exit_status=status if isinstance(status, int) else None,
                        updated=str(body["updated"]) if body.get("updated") else None,
                        output=output)


def _fstype(body: JSONObject) -> tuple[str | None, str | None]:
    fs = as_object(body.get("filesystem"))
    return as_str(fs.get("fstype")), as_str(fs.get("mount_point"))


def _partition(body: JSONObject) -> PartitionInfo:
    return PartitionInfo(as_int(body["id"]), as_int(body.get("size") or 0), *_fstype(body))


def to_block_device(body: JSONObject) -> BlockDevice:
    parts = tuple(_partition(as_object(p)) for p in as_list(body.get("partitions")))
    return BlockDevice(id=as_int(body["id"]), name=str(body.get("name")),
                       size=as_int(body.get("size") or 0), fstype=_fstype(body)[0],
                       partitions=parts)


# Idle connections kept to the region API: every node of a task waiting on MAAS polls it
# from its own thread, and with requests' 10 the rest opened a connection per call.
MAAS_CONNECTIONS = 64


class MaasClient:
    """Talks to MAAS at `url` (e.g. http://maas:5240/MAAS); errors become MaasError."""

    def __init__(self, url: str, api_key: str, *, timeout: float = 30.0, retries: int = 3,
                 backoff: float = 0.5, session: requests.Session | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._api = url.rstrip("/") + "/api/2.0"
        self._auth = oauth_from_key(api_key) if api_key else None
        self._timeout = timeout
        # GET and DELETE are retried (connection errors, 502/503/504) by the session itself;
        # a session given by the caller retries as the caller set it up
        self._session = session or retrying_session(PeerRetry(
            total=retries, allowed_methods=SAFE, status_forcelist=RETRY_CODES,
            backoff_factor=backoff, raise_on_status=False, redirect=False, pause=sleep),
            pool_maxsize=MAAS_CONNECTIONS)

    def _call(self, method: str, path: str, *, params: dict[str, str] | None = None,
              data: dict[str, str] | None = None, stream: bool = False) -> requests.Response:
        try:
            return self._session.request(method, f"{self._api}{path}", params=params, data=data,
                                         auth=self._auth, timeout=self._timeout, stream=stream)
        except requests.RequestException as exc:
            raise MaasError(f"MAAS unreachable for {method} {path}: {exc}",
                            transient=True) from exc

    @staticmethod
    def _check(resp: requests.Response, method: str, path: str) -> None:
        if resp.status_code >= 400:
            text = resp.text.strip()[:500] or resp.reason
            raise MaasError(f"MAAS refused {method} {path} ({resp.status_code}): {text}",
                            transient=resp.status_code in RETRY_CODES,
                            details={"maas_code": resp.status_code, "maas_message": text})

    def _json(self, method: str, path: str, *, params: dict[str, str] | None = None,
              data: dict[str, str] | None = None) -> JSON:
        resp = self._call(method, path, params=params, data=data)
        self._check(resp, method, path)
        try:
            body: JSON = resp.json() if resp.content else None
            return body
        except ValueError as exc:
            raise MaasError(f"MAAS answered {method} {path} with non-JSON") from exc

    def find_machine(self, hostname: str) -> Machine | None:
        found = self._json("GET", "/machines/", params={"hostname": hostname})
        matches = [m for m in as_list(found) if member(m, "hostname") == hostname]
        return to_machine(matches[0]) if matches else None

    def list_machines(self) -> list[Machine]:
        """Every machine, decoded as the listing arrives. MAAS describes each machine in ~7 KB
        (74 MB at 10,000): one json.loads of that holds the interpreter for about a second,
        stalling every request the process serves meanwhile; decoded a machine at a time as
        the bytes arrive (maas.listing), no step holds it for longer than one machine, and no
        whole copy is kept."""
        with self._call("GET", "/machines/", stream=True) as resp:
            self._check(resp, "GET", "/machines/")
            machines: list[Machine] = []
            items = ArrayItems()
            try:
                for chunk in resp.iter_content(CHUNK):
                    machines.extend(to_machine(m) for m in items.feed(chunk))
                machines.extend(to_machine(m) for m in items.close())  # raises if cut short
            except requests.RequestException as exc:
                raise MaasError(f"MAAS broke off GET /machines/: {exc}", transient=True) from exc
            except NotWholeJson as exc:
                raise MaasError(f"MAAS answered GET /machines/ with a listing that is not "
                                f"whole JSON: {exc}", transient=True) from exc
        return machines

    def release(self, system_id: str, erase: str | None) -> Machine:
        data: dict[str, str] = {}
        if erase:
            data["erase"] = "true"
            data["secure_erase" if erase == "secure" else "quick_erase"] = "true"
        body = self._json("POST", f"/machines/{system_id}/", params={"op": "release"},
                          data=data)
        return to_machine(body)

    def delete_machine(self, system_id: str) -> None:
        resp = self._call("DELETE", f"/machines/{system_id}/")
        if resp.status_code == 404 or resp.status_code < 400:
            return
        raise MaasError(f"MAAS refused to delete {system_id} ({resp.status_code}): "
                        f"{resp.text.strip()[:500]}", transient=resp.status_code in RETRY_CODES)

    def find_by_mac(self, mac: str) -> Machine | None:
        found = as_list(self._json("GET", "/machines/", params={"mac_address": mac}))
        return to_machine(found[0]) if found else None

    def rename(self, system_id: str, hostname: str) -> Machine:
        return to_machine(self._json("PUT", f"/machines/{system_id}/",
                                     data={"hostname": hostname}))

    def _op(self, system_id: str, op: str, data: dict[str, str] | None = None) -> Machine:
        return to_machine(self._json("POST", f"/machines/{system_id}/", params={"op": op},
                                     data=data or {}))

    def commission(self, system_id: str) -> Machine:
        return self._op(system_id, "commission")

    def allocate(self, system_id: str) -> Machine:
        return to_machine(self._json("POST", "/machines/", params={"op": "allocate"},
                                     data={"system_id": system_id}))

    def deploy(self, system_id: str, distro_series: str, hwe_kernel: str | None = None,
               user_data: str | None = None) -> Machine:
        data = {"distro_series": distro_series}
        if hwe_kernel:
            data["hwe_kernel"] = hwe_kernel
        if user_data:
            data["user_data"] = user_data
        return self._op(system_id, "deploy", data)

    def block_devices(self, system_id: str) -> list[BlockDevice]:
        found = self._json("GET", f"/nodes/{system_id}/blockdevices/")
        return [to_block_device(as_object(d)) for d in as_list(found)
                if as_object(d).get("type", "physical") == "physical"]

    def commissioning_results(self, system_id: str) -> list[ScriptResult]:
        found = self._json("GET", "/commissioning-results/",
                           params={"system_id": system_id, "result_type": "0"})
        return [to_script_result(r) for r in as_list(found) if isinstance(r, dict)]

    def create_partition(self, system_id: str, device_id: int, size: int | None) -> int:
        data = {"size": str(size)} if size else {}
        body = self._json("POST", f"/nodes/{system_id}/blockdevices/{device_id}/partitions/",
                          data=data)
        return as_int(as_object(body)["id"])

    def format_partition(self, system_id: str, device_id: int, part_id: int, fstype: str,
                         mount_point: str | None) -> None:
        path = f"/nodes/{system_id}/blockdevices/{device_id}/partition/{part_id}"
        self._json("POST", path, params={"op": "format"}, data={"fstype": fstype})
        if mount_point:
            self._json("POST", path, params={"op": "mount"}, data={"mount_point": mount_point})

    def delete_partition(self, system_id: str, device_id: int, part_id: int) -> None:
        self._json("DELETE", f"/nodes/{system_id}/blockdevices/{device_id}/partition/{part_id}")

    def unformat_device(self, system_id: str, device_id: int) -> None:
        self._json("POST", f"/nodes/{system_id}/blockdevices/{device_id}/",
                   params={"op": "unformat"})

    def tags(self) -> list[str]:
        return [str(member(t, "name")) for t in as_list(self._json("GET", "/tags/"))]

    def create_tag(self, name: str, comment: str) -> None:
        self._json("POST", "/tags/", data={"name": name, "comment": comment})

    def tag_machine(self, tag: str, system_id: str) -> None:
        self._json("POST", f"/tags/{tag}/", params={"op": "update_nodes"},
                   data={"add": system_id})

    def delete_tag(self, name: str) -> None:
        resp = self._call("DELETE", f"/tags/{name}/")
        if resp.status_code != 404:
            self._check(resp, "DELETE", f"/tags/{name}/")

    def get_config(self, name: str) -> str | None:
        value = self._json("GET", "/maas/", params={"op": "get_config", "name": name})
        return None if value is None else str(value)

    def set_config(self, name: str, value: str) -> None:
        self._json("POST", "/maas/", params={"op": "set_config"},
                   data={"name": name, "value": value})

    def check(self) -> str:
        version = self._json("GET", "/version/")
        self._json("GET", "/machines/", params={"hostname": "-"})
        return f"MAAS {as_object(version).get('version', '?')} reachable, key accepted"
