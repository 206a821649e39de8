"""etcd 3.4+ learner fields and RPCs that python3-etcd3's generated protobufs predate.

python3-etcd3 0.13 was generated from etcd 3.3's rpc.proto: its MemberAddRequest has no
isLearner (field 2), its Member no IsLearner (field 5), its StatusResponse no
raftAppliedIndex (7) or isLearner (10), and it has no MemberPromote at all. The fields are
encoded and decoded here by their numbers from etcd's api/etcdserverpb/rpc.proto; protobuf
keeps the ones the old classes do not know as unknown fields.
"""

from __future__ import annotations

from etcd3 import etcdrpc
from google.protobuf import unknown_fields
from google.protobuf.message import Message

MEMBER_ADD = "/etcdserverpb.Cluster/MemberAdd"
MEMBER_PROMOTE = "/etcdserverpb.Cluster/MemberPromote"
VARINT = 0


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def extra_varints(message: Message) -> dict[int, int]:
    """Field number -> value of the varint fields the old generated class does not know."""
    return {f.field_number: int(f.data) for f in unknown_fields.UnknownFieldSet(message)
            if f.wire_type == VARINT}


def learner_add_request(peer_url: str) -> bytes:
    """MemberAddRequest{peerURLs: [peer_url], isLearner: true}."""
    request = bytes(etcdrpc.MemberAddRequest(peerURLs=[peer_url]).SerializeToString())
    return request + varint(2 << 3 | VARINT) + varint(1)


def promote_request(member_id: int) -> bytes:
    """MemberPromoteRequest{ID: member_id}."""
    return varint(1 << 3 | VARINT) + varint(member_id)


def is_learner(member: etcdrpc.Member) -> bool:
    """Member.IsLearner (field 5)."""
    return bool(extra_varints(member).get(5, 0))


def status_extras(status: etcdrpc.StatusResponse) -> tuple[int, bool]:
    """StatusResponse.raftAppliedIndex (field 7; the raft index when absent) and isLearner (10)."""
    extra = extra_varints(status)
    return extra.get(7, int(status.raftIndex)), bool(extra.get(10, 0))


def raw(data: bytes) -> bytes:
    return data
