"""sushy-tools emulator drivers that serve the site found in the request's WSGI environ."""

from __future__ import annotations

import tempfile
import threading
from typing import Any

import flask
from sushy_tools.emulator.resources import drives, indicators, storage, volumes
from sushy_tools.emulator.resources.systems.base import AbstractSystemsDriver

from sitesim.bmc.redfish import ENVIRON_KEY, REDFISH_BOOT, RedfishBackend


def _backend() -> RedfishBackend:
    backend: RedfishBackend = flask.request.environ[ENVIRON_KEY]
    return backend


class SiteSystems(AbstractSystemsDriver):  # type: ignore[misc]
    """Systems = the site's Redfish nodes; power and boot device live in the site model."""

    driver = "<sitesim>"

    @property
    def systems(self) -> list[str]:
        return sorted(_backend().nodes)

    def uuid(self, identity: str) -> str:
        return _backend().by_name[_backend().node_of(identity).name]

    def name(self, identity: str) -> str:
        return _backend().node_of(identity).name

    def get_power_state(self, identity: str) -> str:
        backend = _backend()
        node = backend.node_of(identity)
        backend.model.record_call("redfish", "get_power_state", node.name)
        return "On" if backend.model.is_on(node.name) else "Off"

    def set_power_state(self, identity: str, state: str) -> None:
        _backend().set_power(identity, state)

    def get_boot_device(self, identity: str) -> str:
        backend = _backend()
        return REDFISH_BOOT.get(backend.model.boot_device(backend.node_of(identity).name),
                                "Hdd")

    def set_boot_device(self, identity: str, boot_source: str) -> None:
        backend = _backend()
        node = backend.node_of(identity)
        backend.model.record_call("redfish", "set_boot", node.name)
        backend.model.set_boot_device(node.name, boot_source.lower())

    def get_boot_mode(self, identity: str) -> str:
        return "UEFI"

    def set_boot_mode(self, identity: str, boot_mode: str) -> None:
        return None

    def get_secure_boot(self, identity: str) -> bool:
        # Secure boot off (the emulator's default answers 501, which Ironic's sushy retries
        # ten times, 3 s apart, whenever it caches a node's boot mode).
        return False

    def get_nics(self, identity: str) -> list[dict[str, str]]:
        node = _backend().node_of(identity)
        return [{"id": node.mac, "mac": node.mac}]

    def get_total_memory(self, identity: str) -> int:
        return 32

    def get_total_cpus(self, identity: str) -> int:
        return 8

    def get_processors(self, identity: str) -> list[dict[str, Any]]:
        """One x86-64 socket (the emulator's fake driver has none to serve): Redfish
        inspection (Ironic's `redfish` inspect interface) reads the CPU architecture here."""
        _backend().node_of(identity)
        return [{"id": "CPU0", "Id": "CPU0", "socket": "CPU 0", "vendor": "Sitesim",
                 "model": "Sitesim x86-64", "cores": 8, "threads": 8}]

class SiteStorage(storage.StaticDriver):  # type: ignore[misc]
    def get_storage_col(self, identity: str) -> list[dict[str, Any]]:
        return _backend().storage(identity)

class SiteDrives(drives.StaticDriver):  # type: ignore[misc]
    def get_drives(self, identity: str, storage_id: str) -> list[dict[str, Any]]:
        return _backend().drives(identity, storage_id)


class SiteVolumes(volumes.StaticDriver):  # type: ignore[misc]
    """No logical volumes: an empty Volumes collection, as a BMC without RAID answers (the
    emulator's own driver answers 500 for a controller it has no volumes configured for, and a
    Redfish client such as Ironic's inspection retries that for 30 s)."""

    def get_volumes_col(self, identity: str, storage_id: str) -> list[dict[str, Any]]:
        found = super().get_volumes_col(identity, storage_id)
        return list(found) if found else []


_INSTALL_LOCK = threading.Lock()


def install_drivers() -> Any:
    """Put the site-aware drivers into the emulator app (once per process); return the app."""
    from sushy_tools.emulator import main as emulator

    app = emulator.app
    with _INSTALL_LOCK:
        if not app.config.get("SITESIM_INSTALLED"):
            app.config.update(SUSHY_EMULATOR_STATE_DIR=tempfile.mkdtemp(prefix="sushy-state-"),
                              SUSHY_EMULATOR_FAKE_DRIVER=True, SITESIM_INSTALLED=True)
            cache = app.__dict__.setdefault("_cache", {})
            for prop, driver in (("systems", SiteSystems()),
                                 ("storage", SiteStorage(app.config, app.logger)),
                                 ("drives", SiteDrives(app.config, app.logger)),
                                 ("volumes", SiteVolumes(app.config, app.logger)),
                                 ("indicators", SiteIndicators(app.config, app.logger))):
                method = getattr(type(app), prop).fget.__wrapped__
                cache.setdefault(method, {})[(frozenset(), frozenset())] = driver
    return app


class SiteIndicators(indicators.StaticDriver):  # type: ignore[misc]
    """Indicator LEDs in memory: the emulator's own driver keeps them in an SQLite file that
    hundreds of concurrent System GETs lock ("database is locked", a 500)."""

    def __init__(self, config: Any, logger: Any) -> None:
        super(indicators.StaticDriver, self).__init__(config, logger)
        self._indicators: dict[str, str] = dict(config.get("SUSHY_EMULATOR_INDICATOR_LEDS", {}))
