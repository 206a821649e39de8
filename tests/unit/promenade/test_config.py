"""Promenade's options load from an ini file into the settings the operations use."""

from __future__ import annotations

from promenade_api import config
from promenade_api.service import settings_from_conf


def test_defaults_follow_the_spec(tmp_path):
    conf_path = tmp_path / "p.conf"
    conf_path.write_text("")
    s = settings_from_conf(config.load(str(conf_path)))
    assert (s.drain_timeout, s.drain_grace_period, s.clear_labels_timeout,
            s.remove_etcd_timeout, s.etcd_ready_timeout, s.etcd_poll) == (
        3600, 1800, 1800, 1800, 600, 30.0)
    assert s.drain.retry_delay == 5.0
    assert s.drain.maintenance_label == ("maintenance.berth.io/required", "true")
    assert s.drain.lock_patterns == ("eviction-lock.berth.io/*",)
    # Spec 002: Yaook's l2-locks guard its agents, not the node's other pods.
    assert s.drain.agent_lock_patterns == ("l2-lock.maintenance.yaook.cloud/*",)
    assert s.drain.signal_labels() == {
        "maintenance.berth.io/required": "true",
        "maintenance.yaook.cloud/maintenance-required-l2-agent": "True"}
    assert ("state.yaook.cloud/parent-plural", "novacomputenodes") in s.drain.agent_pod_labels
    # Spec 002's protections are on by default.
    assert s.drain.daemonset_like_kinds == ("ConfiguredDaemonSet", "apps.kruise.io/DaemonSet")


def test_options_are_read_from_the_file(tmp_path):
    conf_path = tmp_path / "p.conf"
    conf_path.write_text(
        "[drain]\neviction_retry_delay = 0.5\ndaemonset_like_kinds = ConfiguredDaemonSet,"
        "NodeAgent\nmaintenance_label = example.com/maint=yes\nparallelism = 4\n"
        "[clear_labels]\nkeep = rack,zone/*\n[etcd]\nlease_duration = 15\n"
        "[kubelet]\nshutdown_timeout = 42\n[kubernetes]\nlease_namespace = berth\n")
    s = settings_from_conf(config.load(str(conf_path)))
    assert s.drain.retry_delay == 0.5 and s.drain.parallelism == 4
    assert s.drain.daemonset_like_kinds == ("ConfiguredDaemonSet", "NodeAgent")
    assert s.drain.maintenance_label == ("example.com/maint", "yes")
    assert s.keep_labels == ("rack", "zone/*")
    assert (s.lease_duration, s.kubelet_timeout, s.lease_namespace) == (15, 42, "berth")
