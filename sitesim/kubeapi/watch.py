"""`?watch=true`: a stream of JSON watch events, one per line."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sitesim.kubeapi.errors import KubeBadRequest, KubeGone
from sitesim.kubeapi.resources import ResourceType
from sitesim.kubeapi.selectors import (
    fields_match,
    matches,
    parse_field_selector,
    parse_label_selector,
)
from sitesim.kubeapi.table import to_table

if TYPE_CHECKING:
    from sitesim.kubeapi.cluster import KubeCluster

Obj = dict[str, Any]
MAX_WATCH_SECONDS = 600.0
POLL_SECONDS = 1.0


@dataclass(frozen=True)
class WatchQuery:
    """What a watch asks for."""

    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    resource_version: str | None
    timeout_seconds: float | None
    as_table: bool = False


class _Encoder:
    """Encodes events; as Tables (column definitions in the first one only) when asked."""

    def __init__(self, cluster: KubeCluster, resource: str, as_table: bool) -> None:
        self.cluster, self.resource, self.as_table, self.first = cluster, resource, as_table, True

    def line(self, kind: str, obj: Obj) -> bytes:
        if self.as_table and kind != "ERROR":
            rv = obj["metadata"].get("resourceVersion", "")
            obj = to_table(self.resource, [obj], {"resourceVersion": rv}, self.cluster.wall())
            if not self.first:
                obj["columnDefinitions"] = []
            self.first = False
        return (json.dumps({"type": kind, "object": obj}) + "\n").encode()


def open_watch(cluster: KubeCluster, res: ResourceType, query: WatchQuery) -> Iterator[bytes]:
    """Validate the query now (errors become normal responses), then stream events."""
    labels = parse_label_selector(query.label_selector)
    fields = parse_field_selector(query.field_selector, res.plural)
    rv_text = query.resource_version or ""
    if rv_text and not rv_text.isdigit():
        raise KubeBadRequest(f"invalid resourceVersion {rv_text!r}")
    start = int(rv_text or 0)
    cluster.api.check_watch_start(start)
    timeout = min(query.timeout_seconds or MAX_WATCH_SECONDS, MAX_WATCH_SECONDS)
    deadline = cluster.clock() + timeout

    def selected(obj: Obj) -> bool:
        meta = obj["metadata"]
        if query.namespace and meta.get("namespace") != query.namespace:
            return False
        return matches(labels, meta.get("labels")) and fields_match(fields, obj, res.plural)

    encoder = _Encoder(cluster, res.plural, query.as_table)

    def stream() -> Iterator[bytes]:
        last = start
        if start == 0:
            with cluster.lock:
                last = cluster.store.resource_version
                initial = [copy.deepcopy(o) for o in cluster.store.iter(res, query.namespace)
                           if selected(o)]
            for obj in initial:
                yield encoder.line("ADDED", obj)
        while not cluster.stopping.is_set():
            remaining = deadline - cluster.clock()
            if remaining <= 0:
                return
            with cluster.lock:
                if cluster.store.oldest_event_rv() > last + 1:
                    gone = KubeGone(f"too old resource version: {last}").kube_status()
                    events = []
                else:
                    gone = None
                    events = cluster.store.events_since(res.plural, last)
                    if not events:
                        cluster.store.changed.wait(min(POLL_SECONDS, remaining))
                        events = cluster.store.events_since(res.plural, last)
            if gone is not None:
                yield encoder.line("ERROR", gone)
                return
            for event in events:
                last = event.rv
                if selected(event.obj):
                    yield encoder.line(event.type, event.obj)

    return stream()
