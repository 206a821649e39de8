"""Thread-safe in-memory object store with resourceVersions and a watch event log."""

from __future__ import annotations

import copy
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sitesim.kubeapi.errors import KubeAlreadyExists, KubeConflict, not_found
from sitesim.kubeapi.resources import ResourceType

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)


def iso_now(wall: Callable[[], float]) -> str:
    """An RFC 3339 timestamp (seconds precision) as Kubernetes writes them."""
    return datetime.fromtimestamp(wall(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Event:
    """One change, as a watch reports it."""

    rv: int
    resource: str
    type: str  # ADDED | MODIFIED | DELETED
    obj: Obj


class Store:
    """All objects by resource; every write bumps the global resourceVersion.

    One re-entrant lock guards everything (the API and the controllers share it); watchers
    wait on `changed`, a condition on that lock.
    """

    def __init__(self, wall: Callable[[], float], history: int = 20000) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self._wall = wall
        self._rv = 1
        self._objects: dict[str, dict[Key, Obj]] = {}
        self.events: deque[Event] = deque(maxlen=history)
        self._listeners: list[Callable[[Event], None]] = []

    @property
    def resource_version(self) -> int:
        return self._rv

    def oldest_event_rv(self) -> int:
        """Watches from before this resourceVersion can no longer be served (410)."""
        with self.lock:
            return self.events[0].rv if len(self.events) == self.events.maxlen else 0

    def add_listener(self, listener: Callable[[Event], None]) -> None:
        """Call `listener` (under the lock) after every change."""
        self._listeners.append(listener)

    def _bucket(self, res: ResourceType) -> dict[Key, Obj]:
        return self._objects.setdefault(res.plural, {})

    def get(self, res: ResourceType, namespace: str, name: str) -> Obj:
        """A copy of the object, or NotFound."""
        with self.lock:
            obj = self._bucket(res).get((namespace, name))
            if obj is None:
                raise not_found(res.plural, name, res.group)
            return copy.deepcopy(obj)

    def peek(self, res: ResourceType, namespace: str, name: str) -> Obj | None:
        """The stored object itself (no copy; callers must hold the lock and not mutate it)."""
        return self._bucket(res).get((namespace, name))

    def iter(self, res: ResourceType, namespace: str | None = None) -> Iterator[Obj]:
        """Stored objects (not copies) sorted by namespace then name; hold the lock."""
        bucket = self._bucket(res)
        for key in sorted(bucket):
            obj = bucket.get(key)
            if obj is not None and (namespace is None or key[0] == namespace):
                yield obj

    def create(self, res: ResourceType, obj: Obj) -> Obj:
        """Store a new object (assigning uid, creationTimestamp, resourceVersion)."""
        with self.lock:
            meta = obj.setdefault("metadata", {})
            key = (meta.get("namespace", "") if res.namespaced else "", meta["name"])
            if key in self._bucket(res):
                raise KubeAlreadyExists(f'{res.plural} "{key[1]}" already exists',
                                        kind=res.plural, name=key[1])
            meta["uid"] = meta.get("uid") or str(uuid.uuid4())
            meta["creationTimestamp"] = meta.get("creationTimestamp") or iso_now(self._wall)
            meta["generation"] = meta.get("generation") or 1
            return self._write(res, key, obj, "ADDED")

    def replace(self, res: ResourceType, obj: Obj, *, check_rv: bool = True) -> Obj:
        """Replace a stored object; a stale metadata.resourceVersion is a 409 Conflict."""
        with self.lock:
            meta = obj.setdefault("metadata", {})
            key = (meta.get("namespace", "") if res.namespaced else "", meta["name"])
            current = self._bucket(res).get(key)
            if current is None:
                raise not_found(res.plural, key[1], res.group)
            given = meta.get("resourceVersion")
            if check_rv and given and given != current["metadata"]["resourceVersion"]:
                raise KubeConflict(
                    f'Operation cannot be fulfilled on {res.plural} "{key[1]}": the object has '
                    "been modified; please apply your changes to the latest version and try again",
                    kind=res.plural, name=key[1])
            for field in ("uid", "creationTimestamp", "generation"):
                if field in current["metadata"]:
                    meta[field] = current["metadata"][field]
            if obj.get("spec") != current.get("spec"):
                meta["generation"] = int(current["metadata"].get("generation", 1)) + 1
            if obj == current:
                return copy.deepcopy(current)
            return self._write(res, key, obj, "MODIFIED")

    def delete(self, res: ResourceType, namespace: str, name: str) -> Obj:
        """Remove an object for good; returns its last state."""
        with self.lock:
            key = (namespace if res.namespaced else "", name)
            obj = self._bucket(res).pop(key, None)
            if obj is None:
                raise not_found(res.plural, name, res.group)
            self._rv += 1
            obj["metadata"]["resourceVersion"] = str(self._rv)
            self._emit(Event(self._rv, res.plural, "DELETED", copy.deepcopy(obj)))
            return copy.deepcopy(obj)

    def _write(self, res: ResourceType, key: Key, obj: Obj, kind: str) -> Obj:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        obj.setdefault("apiVersion", res.api_version)
        obj.setdefault("kind", res.kind)
        stored = copy.deepcopy(obj)
        self._bucket(res)[key] = stored
        self._emit(Event(self._rv, res.plural, kind, copy.deepcopy(stored)))
        return copy.deepcopy(stored)

    def _emit(self, event: Event) -> None:
        self.events.append(event)
        for listener in self._listeners:
            listener(event)
        self.changed.notify_all()

    def events_since(self, resource: str, rv: int) -> list[Event]:
        """Events of `resource` after resourceVersion `rv`, oldest first; hold the lock."""
        found: list[Event] = []
        for event in reversed(self.events):
            if event.rv <= rv:
                break
            if event.resource == resource:
                found.append(event)
        found.reverse()
        return found
