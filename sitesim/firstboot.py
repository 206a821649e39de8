"""A deployed server's first boot: the host's own part of joining the site's Kubernetes.

As an Airship host does: the machine finds its boot action key in its MAAS tag
`<hostname>__baid__<key>` and Drydock's boot action API in its cloud-init user data
(`/etc/drydock/bootaction-api`), downloads its units and files from Drydock, and runs each unit:
the unit's EnvironmentFile is read, its ExecStart script run (a Promenade join script's steps:
register the Node with its labels, start the kubelet), then the unit's boot action is reported
to Drydock (`BOOTACTION_REPORT_URL` of the environment file, the node's key in
X-Bootaction-Key). A refused download leaves the node as it is: not joined, nothing reported.

Faults: `host.bootaction_key` fail (the host presents a key Drydock did not give it),
`host.join_script` fail (the script reaches the host cut short)."""

from __future__ import annotations

import base64
import io
import logging
import shlex
import tarfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import requests
import yaml

from sitesim.model import SiteModel

LOG = logging.getLogger(__name__)
KEY_TAG = "__baid__"
API_FILE = "/etc/drydock/bootaction-api"
STEPS_MARKER = "# --- join steps (one per line; the host reads them) ---"
TIMEOUT = 30.0


class JoinFailed(Exception):
    """A unit's script failed on the host (the cause goes into its report)."""


@dataclass
class Unit:
    path: str
    exec_start: str | None
    environment_file: str | None


@dataclass
class FirstBoot:
    """What one host did on its first boot (kept on the site model for the observation API)."""

    node: str
    events: list[str] = field(default_factory=list)
    joined: bool = False


def handed_over(tags: list[str], user_data: str, name: str) -> tuple[str, str] | None:
    """(key, boot action API) when Drydock handed boot actions to this machine."""
    key = next((t.split(KEY_TAG, 1)[1] for t in tags if t.startswith(f"{name}{KEY_TAG}")), None)
    api = _api_from_user_data(user_data)
    return (key, api) if key and api else None


def _api_from_user_data(user_data: str) -> str | None:
    if not user_data:
        return None
    try:
        text = base64.b64decode(user_data).decode()
        config = yaml.safe_load(text) if text.startswith("#cloud-config") else None
    except (ValueError, yaml.YAMLError):
        return None
    for entry in (config or {}).get("write_files") or []:
        if isinstance(entry, dict) and entry.get("path") == API_FILE:
            return str(entry.get("content", "")).strip() or None
    return None


def _untar(data: bytes) -> dict[str, str]:
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member)
            if extracted is not None:
                out[member.name] = extracted.read().decode(errors="replace")
    return out


def parse_unit(path: str, text: str) -> Unit:
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("ExecStart", "EnvironmentFile"):
            values[key.strip()] = value.strip().lstrip("-")
    return Unit(path, values.get("ExecStart"), values.get("EnvironmentFile"))


def parse_env(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and not key.startswith("#"):
            out[key.strip()] = value.strip().strip("'\"")
    return out


def join_steps(script: str) -> list[list[str]]:
    """The steps of a Promenade join script; JoinFailed when it is broken (no steps marker,
    an unknown step, or no join_done at the end)."""
    parts = script.split(STEPS_MARKER, 1)
    if len(parts) < 2:
        raise JoinFailed("not a join script: no steps marker")
    steps = []
    for number, line in enumerate(parts[1].splitlines(), start=1):
        if not line.strip():
            continue
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise JoinFailed(f"step line {number}: {exc}") from exc
        if words[0] not in ("join_register_node", "join_label", "join_start_kubelet",
                            "join_done"):
            raise JoinFailed(f"step line {number}: unknown step {words[0]!r}")
        steps.append(words)
    if not steps or steps[-1] != ["join_done"]:
        raise JoinFailed("the script ends before join_done (cut short)")
    return steps


class HostAgent:
    """Runs first boots of deployed machines on threads of their own (HTTP to Drydock)."""

    def __init__(self, model: SiteModel, *, http: Callable[..., requests.Response] | None = None
                 ) -> None:
        self._model = model
        self._http = http or requests.request
        self.boots: dict[str, FirstBoot] = {}
        self._lock = threading.Lock()

    def boot(self, name: str, key: str, api: str) -> None:
        record = FirstBoot(name)
        with self._lock:
            self.boots[name] = record
        threading.Thread(target=self._run, args=(record, key, api), daemon=True,
                         name=f"firstboot-{name}").start()

    def _note(self, record: FirstBoot, text: str) -> None:
        record.events.append(text)
        LOG.info("%s first boot: %s", record.node, text)

    def _run(self, record: FirstBoot, key: str, api: str) -> None:
        name, model = record.node, self._model
        if model.fault("host.bootaction_key", name) == "fail":
            key = "0" * len(key)  # not the key Drydock handed over
        base = api.rstrip("/")
        try:
            units = self._download(record, f"{base}/nodes/{name}/units", key)
            files = None if units is None else \
                self._download(record, f"{base}/nodes/{name}/files", key)
        except requests.RequestException as exc:
            self._note(record, f"Drydock unreachable: {exc}")
            return
        if units is None or files is None:
            return
        for path, text in sorted(units.items()):
            self._run_unit(record, parse_unit(path, text), files, key)

    def _download(self, record: FirstBoot, url: str, key: str) -> dict[str, str] | None:
        resp = self._http("GET", url, headers={"X-Bootaction-Key": key}, timeout=TIMEOUT)
        if resp.status_code != 200:
            self._note(record, f"GET {url} refused: {resp.status_code} {resp.text[:300]}")
            self._model.record_call("host", "bootaction_refused", record.node)
            return None
        return _untar(resp.content)

    def _run_unit(self, record: FirstBoot, unit: Unit, files: dict[str, str], key: str) -> None:
        env = parse_env(files.get(unit.environment_file or "", ""))
        script_path = (unit.exec_start or "").split()[0] if unit.exec_start else ""
        ok, details = True, []
        try:
            script = files.get(script_path)
            if script is None:
                raise JoinFailed(f"{unit.path}: ExecStart {script_path or '(none)'} not found")
            if self._model.fault("host.join_script", record.node) == "fail":
                script = script.rstrip()[:-len("join_done")]  # its end lost on its way
            if STEPS_MARKER in script or script_path.endswith("join.sh"):
                self._join(record, join_steps(script))
                details.append({"message": f"{record.node} joined Kubernetes ({script_path})",
                                "error": False})
            else:
                details.append({"message": f"{script_path} ran", "error": False})
        except JoinFailed as exc:
            ok = False
            details.append({"message": f"{script_path}: {exc}", "error": True})
            self._note(record, f"{unit.path} failed: {exc}")
        report = env.get("BOOTACTION_REPORT_URL")
        if report:
            body = {"status": "success" if ok else "failure", "details": details}
            resp = self._http("POST", report, json=body, timeout=TIMEOUT,
                              headers={"X-Bootaction-Key": key})
            self._note(record, f"reported {body['status']} to {report}: {resp.status_code}")

    def _join(self, record: FirstBoot, steps: list[list[str]]) -> None:
        """What the script declares, on the site's Kubernetes: the Node with its labels, then
        its kubelet (started once the machine is on)."""
        kube, name = self._model.kube, record.node
        if kube is None:
            raise JoinFailed("the site has no Kubernetes")
        labels: dict[str, str] = {"kubernetes.io/hostname": name}
        for step in steps:
            if step[0] == "join_register_node" and step[1:2] != [name]:
                raise JoinFailed(f"the script registers {step[1:2]}, not {name}")
            if step[0] == "join_label" and len(step) == 3:
                label_key, _, value = step[2].partition("=")
                labels[label_key] = value
        spec = self._model.spec.node(name)
        try:
            kube.add_node(name, labels, ready=False, control_plane=spec.control_plane)
            if any(s[0] == "join_start_kubelet" for s in steps) and self._model.is_on(name):
                kube.set_ready(name, True)
        except Exception as exc:  # the site's Kubernetes refused: the node did not join
            raise JoinFailed(f"Kubernetes refused the node: {exc}") from exc
        record.joined = True
        self._note(record, f"joined with labels {sorted(labels)}")
