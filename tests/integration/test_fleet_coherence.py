"""Coherence on a fleet (issue 13): a write through one gateway must not leave another
gateway's cached copy to be served as a hit.

Three gateways (harness/fleet.py), real upstreams. For each write kind, a key owned by
gateway 1 is read through gateways 0 and 2 (so gateway 1 caches it, and with --fleet-copy all
gateways 0 and 2 keep copies too), then written through gateway 0, then read through 0 and 2:
the new bytes (or 404), never the old. The invalidation reaches the peers a moment after the
write's answer (docs/fleet.md, "Coherence"): the test waits until every peer counted it, and
without it (no invalidation sent) the reads would get the old bytes.

A large object (cached in blocks, each block owned on its own) overwritten at the bucket,
not through the fleet: an asker that has seen the new ETag asks the blocks' owners with
If-Match on it; an owner holding the old version must answer from the bucket, not 412 from
its stale copy, so no byte of the old version is served.
"""
import io
import json
import urllib.error
import urllib.request

import botocore.exceptions
import pytest

from harness import faulty_upstream as faults
from harness import s3util

KiB = 1024
MiB = 1024 * KiB
SIZE = 64 * KiB


def read(gw, bucket, key):
    """The object's bytes through gw, or None for a 404."""
    try:
        return gw.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    except botocore.exceptions.ClientError as exc:
        if exc.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
            return None
        raise


def write_put(fleet, c, bucket, key, new):
    c.put_object(Bucket=bucket, Key=key, Body=new)


def write_delete(fleet, c, bucket, key, new):
    c.delete_object(Bucket=bucket, Key=key)


def write_delete_objects(fleet, c, bucket, key, new):
    c.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": key}]})


def write_copy(fleet, c, bucket, key, new):
    src = key + ".src"
    s3util.upstream_client(fleet.up).put_object(Bucket=bucket, Key=src, Body=new)
    c.copy_object(Bucket=bucket, Key=key, CopySource={"Bucket": bucket, "Key": src})


def write_multipart(fleet, c, bucket, key, new):
    mpu = c.create_multipart_upload(Bucket=bucket, Key=key)
    part = c.upload_part(Bucket=bucket, Key=key, UploadId=mpu["UploadId"], PartNumber=1,
                         Body=io.BytesIO(new))
    c.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=mpu["UploadId"],
                                MultipartUpload={"Parts": [{"PartNumber": 1,
                                                            "ETag": part["ETag"]}]})


WRITES = {
    "put": (write_put, False),
    "delete": (write_delete, True),
    "delete_objects": (write_delete_objects, True),
    "copy": (write_copy, False),
    "multipart": (write_multipart, False),
}


@pytest.mark.parametrize("copy", ["none", "all"])
@pytest.mark.parametrize("kind", sorted(WRITES))
def test_a_write_through_one_gateway_is_seen_through_every_other(upstream, make_fleet, kind,
                                                                 copy):
    write, deletes = WRITES[kind]
    fleet = make_fleet(upstream, copy=copy)
    bucket = upstream.bucket
    key = fleet.key_owned_by(1, prefix=s3util.unique_key("coh-%s-" % kind))
    old, new = s3util.data(SIZE, seed=key + "old"), s3util.data(SIZE, seed=key + "new")
    s3util.upstream_client(upstream).put_object(Bucket=bucket, Key=key, Body=old)

    # Cached at its owner (1), and with --fleet-copy all at the askers (0 and 2) too.
    assert read(fleet[0], bucket, key) == old
    assert read(fleet[2], bucket, key) == old
    st = fleet[1].stats_when(lambda s: s["objects"] >= 1)
    assert st["objects"] >= 1, "gateway 1 does not own %s: harness owner_of is wrong" % key
    if copy == "all":
        for i in (0, 2):
            assert fleet[i].stats_when(lambda s: s["objects"] >= 1)["objects"] >= 1
    assert read(fleet[0], bucket, key) == old  # a hit at the owner (or a copy)
    before = [g.stats()["invalidations"] for g in fleet.gateways]

    write(fleet, fleet[0].client(), bucket, key, new)

    # Every peer takes the invalidation a moment after the write's answer.
    for i in (1, 2):
        fleet[i].stats_when(lambda s, i=i: s["invalidations"] > before[i], timeout=30)
    want = None if deletes else new
    for i in (0, 2, 0, 2):
        got = read(fleet[i], bucket, key)
        assert got == want, "read through gateway %d after a %s through 0 got %s" % (
            i, kind, "the old bytes" if got == old else "other bytes (%r)" % (got and len(got)))


def test_a_peer_cannot_be_made_to_invalidate_without_the_fleet_secret(upstream, make_fleet):
    """The route is for signed peer requests only: unsigned, or with the admin API's rules on
    the client listener, it is refused or unknown, and the cached copy stays."""
    fleet = make_fleet(upstream)
    bucket = upstream.bucket
    key = fleet.key_owned_by(1, prefix=s3util.unique_key("coh-auth-"))
    body = s3util.data(SIZE, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=bucket, Key=key, Body=body)
    assert read(fleet[0], bucket, key) == body
    assert fleet[1].stats_when(lambda s: s["objects"] >= 1)["objects"] >= 1
    target = "/_s3cached/fleet/invalidate?bucket=%s&key=%s" % (bucket, key)
    peer = fleet.urls[1]
    for url, headers in ((peer + target, {}),
                         (peer + target, {"x-s3cached-fleet-identity": "gateway",
                                          "x-s3cached-fleet-date": "1",
                                          "x-s3cached-fleet-signature": "0" * 64}),
                         (fleet[1].endpoint + target, fleet[1].admin_headers())):
        req = urllib.request.Request(url, method="POST", headers=headers, data=b"")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code in (403, 404), (url, err.value.code)
    assert fleet[1].stats()["invalidations"] == 0
    assert fleet[1].stats()["objects"] >= 1


@pytest.mark.parametrize("copy", ["none", "all"])
def test_a_large_object_overwritten_at_the_bucket_never_mixes_versions(upstream, make_fleet,
                                                                       copy):
    """Blocks of 1 MiB spread over the owners; the object is overwritten at the bucket (not
    through the fleet). Gateway 0 owns the object's name, so once its copy is dropped it learns
    the new version from the bucket, and asks the blocks' owners (1 and 2, which hold the old
    blocks) with If-Match on the new ETag: every byte it serves is of the new version."""
    fleet = make_fleet(upstream, copy=copy, cache_size="64M",
                       extra_args=["--block-size", "1M"])
    bucket = upstream.bucket
    blocks = 6
    n = 0
    while True:  # the name owned by 0, blocks owned by both others
        key = fleet.key_owned_by(0, prefix=s3util.unique_key("coh-large-%d-" % n))
        owners = {fleet.block_owner_of(bucket, key, i) for i in range(blocks)}
        if {1, 2} <= owners:
            break
        n += 1
    old = s3util.data(blocks * MiB, seed=key + "old")
    new = s3util.data(blocks * MiB, seed=key + "new")
    up = s3util.upstream_client(upstream)
    up.put_object(Bucket=bucket, Key=key, Body=old)
    for i in (1, 2, 0):  # every block cached at its owner (and copies with all)
        assert read(fleet[i], bucket, key) == old
    for i in (1, 2):
        assert fleet[i].stats_when(lambda s: s["block_objects"] >= 1)["block_objects"] >= 1

    up.put_object(Bucket=bucket, Key=key, Body=new)
    # Gateway 0 drops its copy (as a revalidation would find it changed); 1 and 2 keep theirs.
    req = urllib.request.Request(fleet[0].endpoint + "/_s3cached/invalidate", method="POST",
                                 data=json.dumps({"bucket": bucket, "keys": [key]}).encode(),
                                 headers=dict(fleet[0].admin_headers(),
                                              **{"Content-Type": "application/json"}))
    urllib.request.urlopen(req, timeout=10).read()

    c = fleet[0].client()
    got = c.get_object(Bucket=bucket, Key=key)
    etag = got["ETag"]
    body = got["Body"].read()
    assert body == new, "gateway 0 served %s after the new ETag" % (
        "the old version" if body == old else "a mix of versions")
    for start in range(0, blocks * MiB, MiB // 2):  # ranges over every block, If-Match the new
        r = c.get_object(Bucket=bucket, Key=key, Range="bytes=%d-%d" % (start, start + 4095),
                         IfMatch=etag)
        assert r["Body"].read() == new[start:start + 4096], "old bytes at %d" % start


faulty_upstream = faults.faulty_upstream  # the fixture, visible to this module's tests


def test_a_deleted_key_the_answer_alone_lists_is_dropped_on_the_peers_too(faulty_upstream,
                                                                          make_fleet):
    """A DeleteObjects answer may list a key the request did not name as written (an upstream
    that reads keys differently): the gateway drops it here, and its peers must drop it too.
    The fake upstream (only it can answer so) sends the answer's head, then its body 0.5 s
    later: the head ends the write and tells the peers the request's keys; the answer's own key
    comes after. That key used to be noted on a list already told (and read by the HTTP thread
    as the upstream thread grew it: ThreadSanitizer's report), so the peer kept serving it."""
    fake = faulty_upstream
    fleet = make_fleet(fake.upstream(), n=2)
    bucket = fake.bucket
    other = fleet.key_owned_by(1, prefix="listed-")
    body = s3util.data(SIZE, seed=other)
    fake.put(other, body)
    fake.put("asked", b"x")
    assert read(fleet[1], bucket, other) == body
    assert fleet[1].stats_when(lambda s: s["objects"] >= 1)["objects"] >= 1
    before = fleet[1].stats()["invalidations"]

    fake.answer_deletes(["asked", other], seconds=0.5)
    answer = fleet[0].client().delete_objects(Bucket=bucket,
                                              Delete={"Objects": [{"Key": "asked"}]})
    assert sorted(d["Key"] for d in answer["Deleted"]) == sorted(["asked", other])
    fake.remove(other)
    fake.remove("asked")

    fleet[1].stats_when(lambda s: s["invalidations"] >= before + 2, timeout=10)
    assert read(fleet[1], bucket, other) is None, "gateway 1 still serves a key the upstream deleted"
