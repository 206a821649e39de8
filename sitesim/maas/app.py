"""The MAAS 2.0 HTTP API (`/MAAS/api/2.0/`) over the machine store, as a WSGI app."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from sitesim.maas import render
from sitesim.maas.machines import MaasError, MachineStore
from sitesim.maas.oauth import verify
from sitesim.maas.records import BlockDevice, Machine, Partition
from sitesim.maas.results import CommissioningResults
from sitesim.model import SiteModel

API = render.API
TRUE = ("true", "1", "yes", "on")

URLS = Map([
    Rule(f"{API}/version/", endpoint="version"),
    Rule(f"{API}/machines/", endpoint="machines"),
    Rule(f"{API}/machines/<sid>/", endpoint="machine"),
    Rule(f"{API}/nodes/<sid>/blockdevices/", endpoint="devices"),
    Rule(f"{API}/nodes/<sid>/blockdevices/<int:bid>/", endpoint="device"),
    Rule(f"{API}/nodes/<sid>/blockdevices/<int:bid>/partitions/", endpoint="partitions"),
    Rule(f"{API}/nodes/<sid>/blockdevices/<int:bid>/partition/<int:pid>", endpoint="partition"),
    Rule(f"{API}/tags/", endpoint="tags"),
    Rule(f"{API}/tags/<name>/", endpoint="tag"),
    Rule(f"{API}/maas/", endpoint="maas"),
    Rule(f"{API}/commissioning-results/", endpoint="commissioning_results"),
], strict_slashes=False)


class MaasApp:
    """WSGI callable; every call is verified, counted and mapped onto the machine store."""

    def __init__(self, store: MachineStore, model: SiteModel, api_key: str) -> None:
        self._store = store
        self._model = model
        self._api_key = api_key
        self._results = CommissioningResults()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        request = Request(environ)
        response = self._dispatch(request)
        return response(environ, start_response)

    def _dispatch(self, request: Request) -> Response:
        if not self._model.maas_up:
            self._model.record_call("maas", "refused_down", None)
            return Response("MAAS is down (sitesim outage)", status=503,
                            content_type="text/plain")
        adapter = URLS.bind_to_environ(request.environ)
        try:
            endpoint, args = adapter.match()
        except HTTPException as exc:
            return Response(exc.description or "Not found", status=exc.code or 404,
                            content_type="text/plain")
        if endpoint != "version":
            problem = verify(request.headers.get("Authorization"), self._api_key)
            if problem:
                return Response(problem, status=401, content_type="text/plain",
                                headers={"WWW-Authenticate": 'OAuth realm="OAuth"'})
        handler = getattr(self, f"_{endpoint}")
        try:
            body = handler(request, **args)
        except MaasError as exc:
            return Response(exc.text, status=exc.code, content_type="text/plain")
        if isinstance(body, Response):
            return body
        return Response(json.dumps(body), status=200, content_type="application/json")

    def _count(self, op: str, machine: Machine | None) -> None:
        self._model.record_call("maas", op, machine.hostname if machine else None)

    def _json(self, machine: Machine) -> dict[str, Any]:
        return render.machine_json(machine, self._model.is_on(machine.hostname))

    # --- handlers ----------------------------------------------------------------------
    def _version(self, request: Request) -> dict[str, Any]:
        return {"version": "2.9.2", "subversion": "sitesim",
                "capabilities": ["networks-management", "static-ipaddresses",
                                 "ipv6-deployment-ubuntu", "devices-management",
                                 "storage-deployment-ubuntu", "network-deployment-ubuntu"]}

    def _machines(self, request: Request) -> Any:
        op = request.args.get("op")
        if request.method == "GET" and op is None:
            self._count("list", None)
            found = self._store.list(request.args.getlist("hostname"),
                                     request.args.getlist("mac_address"),
                                     request.args.getlist("id"))
            return [self._json(m) for m in found]
        if request.method == "POST" and op is None:
            machine = self._store.enlist_by_request(request.values.get("hostname", ""),
                                                    request.values.getlist("mac_addresses"))
            self._results.commissioning(machine.system_id, self._model.spec.timings.commission)
            self._count("create", machine)
            return self._json(machine)
        if request.method == "POST" and op == "allocate":
            machine = self._store.allocate(request.values.get("name"),
                                           request.values.get("system_id"))
            self._count("allocate", machine)
            return self._json(machine)
        raise MaasError(400 if request.method == "POST" else 405,
                        f"Unrecognised signature: method={request.method} op={op}")

    def _machine(self, request: Request, sid: str) -> Any:
        machine = self._store.get(sid)
        op = request.args.get("op") or request.form.get("op")
        key = (request.method, op)
        if key == ("GET", None):
            self._count("get", machine)
            return self._json(machine)
        if key == ("PUT", None):
            self._count("update", machine)
            return self._json(self._store.update(sid, request.form.to_dict()))
        if key == ("DELETE", None):
            self._count("delete", machine)
            self._store.delete(sid)
            return Response(status=204)
        if op in ("power_parameters", "query_power_state") and request.method in ("GET", "POST"):
            self._count(op, machine)
            if op == "power_parameters":
                return dict(machine.power_parameters)
            return {"state": "on" if self._model.is_on(machine.hostname) else "off"}
        if request.method == "POST" and op in MACHINE_OPS:
            self._count(op, machine)
            return self._json(MACHINE_OPS[op](self, request, machine))
        raise MaasError(400 if request.method == "POST" else 405,
                        f"Unrecognised signature: method={request.method} op={op}")

    def _op_commission(self, request: Request, machine: Machine) -> Machine:
        commissioned = self._store.commission(machine.system_id)
        self._results.commissioning(machine.system_id, self._model.spec.timings.commission)
        return commissioned

    def _commissioning_results(self, request: Request) -> Any:
        """GET /commissioning-results/?system_id=&name=&result_type= (MAAS 2.x)."""
        self._require(request, "GET", None)
        self._count("commissioning_results", None)
        raw_type = request.args.get("result_type")
        if raw_type is not None and not raw_type.isdigit():
            raise MaasError(400, json.dumps({"result_type": ["Enter a whole number."]}))
        ids = request.args.getlist("system_id")
        names = request.args.getlist("name")
        return [r for m in self._store.list([], [], ids)
                for r in self._results.of(m, names, None if raw_type is None else int(raw_type))]

    def _op_deploy(self, request: Request, machine: Machine) -> Machine:
        return self._store.deploy(machine.system_id, request.values.get("distro_series", ""),
                                  request.values.get("user_data", ""))

    def _op_release(self, request: Request, machine: Machine) -> Machine:
        flags = {k: request.values.get(k, "").lower() in TRUE
                 for k in ("erase", "secure_erase", "quick_erase")}
        for name, on in flags.items():
            if on:
                self._count(name, machine)
        return self._store.release(machine.system_id, flags["erase"], flags["secure_erase"],
                                   flags["quick_erase"])

    def _op_power(self, request: Request, machine: Machine, on: bool) -> Machine:
        self._model.set_power_later(machine.hostname, on, self._model.spec.timings.power)
        return machine

    def _op_layout(self, request: Request, machine: Machine) -> Machine:
        return self._store.set_storage_layout(machine.system_id,
                                              request.values.get("storage_layout", ""))

    def _devices(self, request: Request, sid: str) -> Any:
        machine = self._store.get(sid)
        self._require(request, "GET", None)
        self._count("blockdevices", machine)
        return [render.block_device_json(machine, d) for d in machine.block_devices]

    def _device(self, request: Request, sid: str, bid: int) -> Any:
        machine, device = self._store.block_device(sid, bid)
        op = request.args.get("op")
        if request.method == "GET" and op is None:
            return render.block_device_json(machine, device)
        if request.method == "DELETE" and op is None:
            self._count("blockdevice_delete", machine)
            self._store.delete_block_device(sid, bid)
            return Response(status=204)
        self._format_op(request, machine, device, device, "blockdevice")
        return render.block_device_json(machine, device)

    def _partitions(self, request: Request, sid: str, bid: int) -> Any:
        machine, device = self._store.block_device(sid, bid)
        if request.method == "POST":
            self._count("partition_create", machine)
            size = request.values.get("size")
            part = self._store.add_partition(sid, bid, int(size) if size else None)
            return render.partition_json(machine, device, part)
        self._require(request, "GET", None)
        return [render.partition_json(machine, device, p) for p in device.partitions]

    def _partition(self, request: Request, sid: str, bid: int, pid: int) -> Any:
        machine, device, part = self._store.partition(sid, bid, pid)
        op = request.args.get("op")
        if request.method == "GET" and op is None:
            return render.partition_json(machine, device, part)
        if request.method == "DELETE" and op is None:
            self._count("partition_delete", machine)
            self._store.delete_partition(sid, bid, pid)
            return Response(status=204)
        if request.method == "POST" and op == "mount":
            point = request.values.get("mount_point")
            if not point:
                raise MaasError(400, json.dumps({"mount_point": ["This field is required."]}))
            self._count("partition_mount", machine)
            self._store.mount(part, machine, point)
            return render.partition_json(machine, device, part)
        self._format_op(request, machine, part, device, "partition")
        return render.partition_json(machine, device, part)

    def _tags(self, request: Request) -> Any:
        if request.method == "GET":
            return [{"name": n, "comment": c, "definition": "", "kernel_opts": ""}
                    for n, c in sorted(self._store.tags.items())]
        self._require(request, "POST", None)
        name = request.values.get("name", "")
        if not name or name in self._store.tags:
            problem = "This field is required." if not name else \
                "Tag with this Name already exists."
            raise MaasError(400, json.dumps({"name": [problem]}))
        self._count("tag_create", None)
        self._store.tags[name] = request.values.get("comment", "")
        return {"name": name, "comment": self._store.tags[name], "definition": ""}

    def _tag(self, request: Request, name: str) -> Any:
        if name not in self._store.tags:
            raise MaasError(404, "No Tag matches the given query.")
        if request.method == "POST" and request.args.get("op") == "update_nodes":
            for sid in request.values.getlist("add"):
                machine = self._store.get(sid)
                if name not in machine.tags:
                    machine.tags.append(name)
            return {"added": len(request.values.getlist("add")), "removed": 0}
        if request.method == "DELETE":
            del self._store.tags[name]
            for machine in self._store.list([], [], []):
                if name in machine.tags:
                    machine.tags.remove(name)
            return Response(status=204)
        self._require(request, "GET", None)
        return {"name": name, "comment": self._store.tags[name], "definition": ""}

    def _maas(self, request: Request) -> Any:
        op = request.args.get("op")
        name = request.values.get("name", "")
        if request.method == "GET" and op == "get_config":
            return self._store.config.get(name)
        if request.method == "POST" and op == "set_config":
            if not name:
                raise MaasError(400, json.dumps({"name": ["This field is required."]}))
            self._count("set_config", None)
            self._store.config[name] = request.values.get("value", "")
            return None
        raise MaasError(400, f"Unrecognised signature: method={request.method} op={op}")

    def _format_op(self, request: Request, machine: Machine, target: BlockDevice | Partition,
                   device: BlockDevice, kind: str) -> None:
        op = request.args.get("op")
        if request.method == "POST" and op == "format":
            fstype = request.values.get("fstype")
            if not fstype:
                raise MaasError(400, json.dumps({"fstype": ["This field is required."]}))
            self._count(f"{kind}_format", machine)
            self._store.format(target, machine, fstype, request.values.get("mount_point"))
        elif request.method == "POST" and op == "unformat":
            self._count(f"{kind}_unformat", machine)
            self._store.unformat(target, machine, device)
        else:
            raise MaasError(400, f"Unrecognised signature: method={request.method} op={op}")

    @staticmethod
    def _require(request: Request, method: str, op: str | None) -> None:
        if request.method != method or request.args.get("op") != op:
            raise MaasError(405 if request.method != method else 400,
                            f"Unrecognised signature: method={request.method} "
                            f"op={request.args.get('op')}")


MACHINE_OPS: dict[str, Callable[[MaasApp, Request, Machine], Machine]] = {
    "commission": MaasApp._op_commission,
    "deploy": MaasApp._op_deploy,
    "release": MaasApp._op_release,
    "power_on": lambda app, req, m: app._op_power(req, m, True),
    "power_off": lambda app, req, m: app._op_power(req, m, False),
    "set_storage_layout": MaasApp._op_layout,
}
