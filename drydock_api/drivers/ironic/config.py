"""Drydock's [ironic] options: where Ironic answers and how long its waits and retries last."""

from __future__ import annotations

from oslo_config import cfg

from drydock_api.drivers.ironic.client import API_VERSION, IronicSettings

IRONIC_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("url", default="",
               help="Ironic's API root (http://host:6385, no /v1). Empty: this Drydock has no "
                    "Ironic. A design whose drydock/Region/v1 says provisioner: ironic is "
                    "provisioned, and its nodes powered, through this Ironic."),
    cfg.StrOpt("api_version", default=API_VERSION,
               help="Ironic API microversion asked for (1.61 or newer: retired fields)."),
    cfg.IntOpt("lock_retries", default=8, min=0,
               help="Retries of a call Ironic answers 409 NodeLocked (the node is busy)."),
    cfg.FloatOpt("lock_backoff", default=0.5, min=0.0,
                 help="First delay after NodeLocked (s), doubled up to 4 s."),
    cfg.FloatOpt("poll_interval", default=1.0, min=0.01,
                 help="How often a wait for an Ironic state reads the node (s)."),
    cfg.FloatOpt("state_timeout", default=600.0, min=1.0,
                 help="Longest wait for a provision state (manage, provide, deploy, undeploy)."),
    cfg.FloatOpt("power_timeout", default=60.0, min=1.0,
                 help="Timeout Ironic is given for a power action (its `timeout` field): a "
                      "soft power off not done by then fails with Ironic's last_error."),
    cfg.StrOpt("kernel_url", default="",
               help="The ramdisk deploy's kernel (instance_info kernel; file:// or http://)."),
    cfg.StrOpt("ramdisk_url", default="",
               help="The ramdisk deploy's ramdisk (instance_info ramdisk)."),
]


def settings(group: cfg.ConfigOpts.GroupAttr) -> IronicSettings:
    return IronicSettings(api_version=group.api_version, lock_retries=group.lock_retries,
                          lock_backoff=group.lock_backoff, poll=group.poll_interval,
                          timeout=group.state_timeout, power_timeout=group.power_timeout,
                          kernel_url=group.kernel_url, ramdisk_url=group.ramdisk_url)
