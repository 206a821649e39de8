"""Drydock's ports on an Ironic site: the Provisioner and the OobDriver both through Ironic."""

from __future__ import annotations

from oslo_config import cfg

from drydock_api.drivers.ipmi.driver import IpmiDriver
from drydock_api.drivers.ironic.client import IronicClient, connect
from drydock_api.drivers.ironic.config import settings
from drydock_api.drivers.ironic.provisioner import IronicOob, IronicProvisioner
from drydock_api.drivers.ports import OobDriver, OobRouter
from drydock_api.drivers.redfish.driver import RedfishDriver


def ironic_ports(conf: cfg.ConfigOpts,
                 direct: OobDriver | None = None) -> tuple[IronicProvisioner, IronicOob]:
    """`[ironic] url` set: Ironic provisions, and powers nodes at their BMCs; disk erase by
    the BMC (Redfish Drive.SecureErase) stays with `direct`."""
    client = IronicClient(connect(conf.ironic.url, conf.ironic.api_version),
                          settings(conf.ironic))
    direct = direct or OobRouter({"redfish": RedfishDriver(timeout=conf.oob.request_timeout),
                                  "ipmi": IpmiDriver()})
    return IronicProvisioner(client), IronicOob(client, direct)
