"""Drydock unit fixtures: a runtime on SQLite (or PostgreSQL) with in-memory drivers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from drydock_api import config
from drydock_api.drivers.maas.fake import FakeMaas
from drydock_api.drivers.oob_fake import FakeOob
from drydock_api.drivers.promenade import FakeLabeller
from drydock_api.runtime import Runtime, build_runtime
from tests.unit.drydock import designs


class FakeClock:
    """A settable clock whose sleep advances time (thread-safe)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


@dataclass
class Site:
    runtime: Runtime
    maas: FakeMaas
    oob: FakeOob
    labeller: FakeLabeller
    href: str
    docs: list[dict[str, Any]]
    clock: FakeClock | None

    def address(self, name: str) -> str:
        node = next(d for d in self.docs if d["metadata"]["name"] == name
                    and d["schema"] == "drydock/BaremetalNode/v1")
        return str(node["data"]["addressing"][0]["address"])


def make_conf(tmp: Path, url: str | None = None, **groups: dict[str, Any]) -> Any:
    conf = config.load(str(tmp / "absent.conf"))
    conf.set_override("connection", url or f"sqlite:///{tmp}/drydock.db", group="database")
    conf.set_override("file_root", str(tmp), group="design")
    conf.set_override("design_key_file", str(tmp / "designs.key"), group="database")
    tiny = {"oob": {"poll_interval": 0.001, "graceful_timeout": 0.05, "power_timeout": 5.0},
            "steps": {"maas_poll_interval": 0.001, "step_retry_delay": 0.001, "outage_window": 0,
                      "release_timeout": 5.0},
            "worker": {"lease_seconds": 5.0, "poll_interval": 0.01},
            "site_design": {"source": "tasks"}}
    for group, opts in {**tiny, **groups}.items():
        for key, value in opts.items():
            conf.set_override(key, value, group=group)
    return conf


SiteFactory = Callable[..., Site]


@pytest.fixture
def make_site(tmp_path: Path) -> Iterator[SiteFactory]:
    made: list[Runtime] = []

    def factory(names: list[str] | None = None, *, docs: list[dict[str, Any]] | None = None,
                url: str | None = None, clock: FakeClock | None = None,
                **groups: dict[str, Any]) -> Site:
        names = names if names is not None else ["n1", "n2", "n3"]
        docs = docs if docs is not None else designs.simple_site(names)
        href = designs.write(tmp_path / f"site{len(made)}.yaml", docs)
        maas, oob, labeller = FakeMaas(names), FakeOob(), FakeLabeller()
        kwargs: dict[str, Any] = {}
        if clock is not None:
            kwargs = {"clock": clock, "sleep": clock.sleep}
        runtime = build_runtime(make_conf(tmp_path, url, **groups), maas=maas, oob=oob,
                                labeller=labeller, **kwargs)
        made.append(runtime)
        return Site(runtime, maas, oob, labeller, href, docs, clock)

    yield factory
    for runtime in made:
        runtime.stop()
        runtime.pool.shutdown(wait=False, cancel_futures=True)
        runtime.store.engine.dispose()
