"""Real etcd clusters from /usr/bin/etcd on loopback: start, health, stop, member re-add."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from sitesim.ports import free_port
from sitesim.processes import terminate

ETCD_BINARY = "/usr/bin/etcd"


class EtcdError(Exception):
    """An etcd cluster or member could not be started or reached."""


@dataclass
class EtcdMember:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def client_url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class EtcdCluster:
    """One etcd cluster whose member names are node names."""

    def __init__(self, name: str, members: list[str], workdir: Path,
                 binary: str = ETCD_BINARY, ready_timeout: float = 30.0) -> None:
        self.name = name
        self._binary = binary
        self._workdir = workdir / f"etcd-{name}"
        self._ready_timeout = ready_timeout
        self._lock = threading.RLock()
        self._known: list[str] = list(members)
        self.members: dict[str, EtcdMember] = {
            m: EtcdMember(m, free_port(), free_port(), self._workdir / m) for m in members}

    @property
    def client_endpoints(self) -> list[str]:
        return [m.client_url for m in self.members.values()]

    def start(self) -> None:
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members.values())
        for member in self.members.values():
            shutil.rmtree(member.data_dir, ignore_errors=True)
            self._spawn(member, initial, "new")
        for member in self.members.values():
            self._wait_healthy(member)

    def stop(self) -> None:
        for member in self.members.values():
            self._kill(member)

    def _spawn(self, member: EtcdMember, initial_cluster: str, state: str) -> None:
        member.data_dir.parent.mkdir(parents=True, exist_ok=True)
        log = open(self._workdir / f"{member.name}.log", "ab")  # noqa: SIM115 - child keeps it
        args = [
            self._binary, "--name", member.name, "--data-dir", str(member.data_dir),
            "--listen-client-urls", member.client_url,
            "--advertise-client-urls", member.client_url,
            "--listen-peer-urls", member.peer_url,
            "--initial-advertise-peer-urls", member.peer_url,
            "--initial-cluster", initial_cluster,
            "--initial-cluster-state", state,
            "--initial-cluster-token", f"sitesim-{self.name}",
            "--heartbeat-interval", "100", "--election-timeout", "1000",
            "--logger", "zap", "--log-outputs", "stderr",
        ]
        try:
            member.process = subprocess.Popen(args, stdout=log, stderr=log,
                                              stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise EtcdError(f"cannot start etcd member {member.name}: {exc}") from exc
        finally:
            log.close()

    def _kill(self, member: EtcdMember, timeout: float = 10.0) -> None:
        proc = member.process
        if proc is None:
            return
        terminate(proc, timeout)
        member.process = None

    def healthy(self, name: str, timeout: float = 1.0) -> bool:
        member = self.members[name]
        if not member.running:
            return False
        try:
            reply = requests.get(f"{member.client_url}/health", timeout=timeout)
            return bool(reply.ok and reply.json().get("health") == "true")
        except (requests.RequestException, ValueError):
            return False

    def _wait_healthy(self, member: EtcdMember) -> None:
        deadline = time.monotonic() + self._ready_timeout
        while time.monotonic() < deadline:
            if self.healthy(member.name, timeout=0.5):
                return
            if not member.running:
                raise EtcdError(f"etcd member {member.name} of {self.name} exited; see "
                                f"{self._workdir / (member.name + '.log')}")
            time.sleep(0.05)
        raise EtcdError(f"etcd member {member.name} of {self.name} not healthy in time")

    def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        errors = []
        for member in self.members.values():
            if not member.running:
                continue
            try:
                reply = requests.post(f"{member.client_url}{path}", json=body, timeout=2)
                if reply.ok:
                    result: dict[str, Any] = reply.json()
                    return result
                errors.append(f"{member.name}: {reply.status_code} {reply.text[:200]}")
            except (requests.RequestException, ValueError) as exc:
                errors.append(f"{member.name}: {exc}")
        raise EtcdError(f"etcd cluster {self.name}: no member answered {path}: {errors}")

    def member_list(self) -> list[dict[str, Any]]:
        reply = self._call("/v3/cluster/member/list", {})
        return list(reply.get("members", []))

    def member_names(self) -> list[str]:
        """Names of the current members (last known list when no member answers)."""
        with self._lock:
            try:
                peers = {m.peer_url: m.name for m in self.members.values()}
                self._known = [m.get("name") or peers.get((m.get("peerURLs") or [""])[0], "")
                               for m in self.member_list()]
            except EtcdError:
                pass
            return [n for n in self._known if n]

    def stop_member(self, name: str) -> None:
        with self._lock:
            self._kill(self.members[name])

    def restart_member(self, name: str) -> None:
        """Start a stopped member again on its existing data directory."""
        with self._lock:
            member = self.members[name]
            if member.running:
                return
            initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members.values())
            self._spawn(member, initial, "existing")
        self._wait_healthy(member)

    def readd_member(self, name: str) -> None:
        """Bring a removed member back: member add, fresh data dir, `existing` state."""
        with self._lock:
            member = self.members[name]
            self._kill(member)
            current = [m for m in self.member_list() if m.get("name") != name]
            if any(member.peer_url in (m.get("peerURLs") or []) for m in current):
                raise EtcdError(f"{name} is still a member of {self.name}")
            self._call("/v3/cluster/member/add", {"peerURLs": [member.peer_url]})
            self._spawn_joining(member, current)
        self._wait_healthy(member)

    def add_member_slot(self, name: str) -> EtcdMember:
        """A member this cluster may gain later (its ports chosen now, nothing started)."""
        with self._lock:
            return self.members.setdefault(
                name, EtcdMember(name, free_port(), free_port(), self._workdir / name))

    def start_added_member(self, name: str) -> bool:
        """Start a member that someone else added (e.g. as a learner) on a fresh data dir,
        as the node's etcd does when it finds itself in the member list; False unless the
        list holds it as never started (no name yet). Does not wait for it (a learner is
        never "healthy")."""
        with self._lock:
            member = self.members[name]
            listed = self.member_list()
            if member.running or not any(member.peer_url in (m.get("peerURLs") or [])
                                         and not m.get("name") for m in listed):
                return False
            self._spawn_joining(member, [m for m in listed
                                         if member.peer_url not in (m.get("peerURLs") or [])])
            return True

    def _spawn_joining(self, member: EtcdMember, others: list[dict[str, Any]]) -> None:
        shutil.rmtree(member.data_dir, ignore_errors=True)
        initial = ",".join([f"{m['name']}={m['peerURLs'][0]}" for m in others if m.get("name")]
                           + [f"{member.name}={member.peer_url}"])
        self._spawn(member, initial, "existing")

    def pids(self) -> list[int]:
        return [m.process.pid for m in self.members.values() if m.process is not None]


def etcd_available(binary: str = ETCD_BINARY) -> bool:
    return os.access(binary, os.X_OK)
