"""The sitesim observation and fault API (SITESIM_URL): nodes, call counts, faults."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from common.status import simple_message, status_body
from sitesim.bmc.ipmi import apply_chassis
from sitesim.model import SiteModel, UnknownNode
from sitesim.siteconfig import SiteConfigError

SYSTEMS = ("maas", "redfish", "ipmi", "kube", "etcd", "host")  # host: a server's own acts
IPMI_DIRECTIVES = {"power_off": 0, "power_on": 1, "power_cycle": 2, "power_reset": 3,
                   "graceful_shutdown": 5}
MAX_BODY = 64 * 1024

URLS = Map([
    Rule("/health", endpoint="health", methods=["GET"]),
    Rule("/site", endpoint="site", methods=["GET"]),
    Rule("/nodes", endpoint="nodes", methods=["GET"]),
    Rule("/nodes/<name>", endpoint="node", methods=["GET"]),
    Rule("/nodes/<name>/power", endpoint="power", methods=["GET", "PUT"]),
    Rule("/nodes/<name>/bmc", endpoint="bmc", methods=["GET", "PUT"]),
    Rule("/nodes/<name>/bmc/ipmi", endpoint="ipmi", methods=["POST"]),
    Rule("/calls", endpoint="calls", methods=["GET"]),
    Rule("/maas", endpoint="maas", methods=["GET", "PUT"]),
    Rule("/operations", endpoint="operations", methods=["GET"]),
    Rule("/faults", endpoint="faults", methods=["GET", "POST", "DELETE"]),
], strict_slashes=False)


class AdminError(Exception):
    def __init__(self, code: int, message: str, problems: Iterable[str] = (),
                 reason: str = "BadRequest") -> None:
        self.code, self.message, self.reason = code, message, reason
        self.problems = list(problems) or [message]
        super().__init__(message)


class AdminApp:
    """WSGI app over the site model; `site_info` returns the URLs and ports of the site."""

    def __init__(self, model: SiteModel, site_info: Callable[[], dict[str, Any]]) -> None:
        self._model = model
        self._site_info = site_info

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        request = Request(environ)
        try:
            endpoint, args = URLS.bind_to_environ(environ).match()
            body, code = getattr(self, f"_{endpoint}")(request, **args)
        except HTTPException as exc:
            reason = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.code or 0, "BadRequest")
            text = (f"No route for {request.method} {request.path}" if exc.code == 404 else
                    f"Method {request.method} is not allowed on {request.path}")
            body, code = _status(exc.code or 400, text, [text], reason), exc.code or 400
        except UnknownNode as exc:
            text = f"No node named {exc.args[0]!r} in this site"
            body, code = _status(404, "Node not found", [text], "NotFound"), 404
        except AdminError as exc:
            body, code = _status(exc.code, exc.message, exc.problems, exc.reason), exc.code
        if code == 204:
            return Response(status=204)(environ, start_response)
        return Response(json.dumps(body), status=code,
                        content_type="application/json")(environ, start_response)

    # --- handlers ------------------------------------------------------------------------
    def _health(self, request: Request) -> tuple[Any, int]:
        return {"status": "ok", "site": self._model.spec.name}, 200

    def _site(self, request: Request) -> tuple[Any, int]:
        return self._site_info(), 200

    def _nodes(self, request: Request) -> tuple[Any, int]:
        return self._model.views(), 200

    def _node(self, request: Request, name: str) -> tuple[Any, int]:
        return self._model.view(name), 200

    def _power(self, request: Request, name: str) -> tuple[Any, int]:
        self._model.node(name)
        if request.method == "PUT":
            body = _json_body(request)
            if body.get("power") not in ("on", "off") or set(body) - {"power"}:
                raise AdminError(400, "Invalid power request",
                                 ['body must be {"power": "on"|"off"}'])
            self._model.set_power(name, body["power"] == "on")
        return {"power": "on" if self._model.is_on(name) else "off"}, 200

    def _bmc(self, request: Request, name: str) -> tuple[Any, int]:
        """Kill (`{"running": false}`) or restart a node's BMC; GET tells whether it runs."""
        self._model.node(name)
        if request.method == "PUT":
            body = _json_body(request)
            if not isinstance(body.get("running"), bool) or set(body) - {"running"}:
                raise AdminError(400, "Invalid BMC request",
                                 ['body must be {"running": true|false}'])
            impl = self._model.spec.node(name).bmc.impl
            if impl == "pyghmi":
                raise AdminError(400, "Invalid BMC request", [
                    f"{name}'s BMC shares the in-process pyghmi listener and cannot be killed "
                    "alone; use a node with an ipmi_sim or Redfish BMC"])
            self._model.set_bmc_running(name, body["running"])
        return {"running": self._model.bmc_running(name)}, 200

    def _ipmi(self, request: Request, name: str) -> tuple[Any, int]:
        """Backend of the ipmi_sim BMCs' chassis_control program."""
        self._model.node(name)
        body = _json_body(request)
        op = body.get("op")
        model, node = self._model, self._model.spec.node(name)
        if op == "get_power_state":
            model.record_call("ipmi", op, name)
            return {"power": "on" if model.is_on(name) else "off"}, 200
        if op == "get_boot":
            return {"device": model.boot_device(name)}, 200
        if op == "set_boot" and isinstance(body.get("device"), str):
            model.record_call("ipmi", "set_boot", name)
            model.set_boot_device(name, body["device"])
            return {"device": body["device"]}, 200
        if op not in IPMI_DIRECTIVES:
            raise AdminError(400, "Invalid IPMI request", [
                f"op must be one of get_power_state, get_boot, set_boot, "
                f"{', '.join(IPMI_DIRECTIVES)}; got {op!r}"])
        model.record_call("ipmi", op, name)
        effect = model.fault("bmc.power", name)
        if effect == "hang":
            model.wait_while_hung("bmc.power", name)
        elif effect == "fail":
            raise AdminError(500, "BMC power operation failed",
                             [f"injected fault bmc.power on {name}"], "InternalError")
        apply_chassis(model, node, IPMI_DIRECTIVES[op])
        return {"power": "on" if model.is_on(name) else "off"}, 200

    def _maas(self, request: Request) -> tuple[Any, int]:
        """Take the MAAS API down (`{"up": false}`: every request answered 503) or back up."""
        if request.method == "PUT":
            body = _json_body(request)
            if not isinstance(body.get("up"), bool) or set(body) - {"up"}:
                raise AdminError(400, "Invalid MAAS request", ['body must be {"up": true|false}'])
            self._model.maas_up = body["up"]
        return {"up": self._model.maas_up}, 200

    def _calls(self, request: Request) -> tuple[Any, int]:
        args = request.args
        problems = [f"unknown query parameter {k!r}" for k in args
                    if k not in ("system", "op", "node")]
        system = args.get("system")
        if system is not None and system not in SYSTEMS:
            problems.append(f"system must be one of {', '.join(SYSTEMS)}")
        node = args.get("node")
        if node is not None and node not in self._model.nodes:
            problems.append(f"node {node!r} is not a node of this site")
        if problems:
            raise AdminError(400, "Invalid call-count query", problems)
        return {"count": self._model.call_count(system, args.get("op"), node)}, 200

    def _operations(self, request: Request) -> tuple[Any, int]:
        """The simulated work the site did (power, erase, MAAS, pods, kubelet), with its start
        and end (epoch seconds), optionally of one node and ending after `since`."""
        args = request.args
        problems = [f"unknown query parameter {k!r}" for k in args if k not in ("node", "since")]
        node = args.get("node")
        if node is not None and node not in self._model.nodes:
            problems.append(f"node {node!r} is not a node of this site")
        try:
            since = float(args.get("since", "0"))
        except ValueError:
            problems.append("since must be a number of seconds since the epoch")
            since = 0.0
        if problems:
            raise AdminError(400, "Invalid operations query", problems)
        return {"operations": self._model.operations(node, since)}, 200

    def _faults(self, request: Request) -> tuple[Any, int]:
        if request.method == "DELETE":
            self._model.clear_faults()
            return None, 204
        if request.method == "POST":
            try:
                fault = self._model.add_fault(_json_body(request))
            except SiteConfigError as exc:
                raise AdminError(400, "Invalid fault", exc.problems) from exc
            return {"node": fault.node, "operation": fault.operation,
                    "effect": fault.effect}, 201
        return self._model.faults(), 200


def _json_body(request: Request) -> dict[str, Any]:
    if request.mimetype != "application/json":
        raise AdminError(415, "Unsupported media type", [
            f"Content-Type must be application/json, got {request.mimetype or 'none'!r}"],
            "UnsupportedMediaType")
    if (request.content_length or 0) > MAX_BODY:
        raise AdminError(413, "Body too large", [f"body exceeds {MAX_BODY} bytes"],
                         "PayloadTooLarge")
    try:
        body = json.loads(request.get_data(as_text=True) or "null")
    except ValueError as exc:
        raise AdminError(400, "Malformed JSON", [f"body is not valid JSON: {exc}"]) from exc
    if not isinstance(body, dict):
        raise AdminError(400, "Invalid body", ["body must be a JSON object"])
    return body


def _status(code: int, message: str, problems: list[str], reason: str) -> dict[str, Any]:
    return status_body(code, message, reason=reason, retry=code >= 500,
                       messages=[simple_message(p) for p in problems])
