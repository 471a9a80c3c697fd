"""Writes through the gateway drop its cached copy: PUT, DELETE, CopyObject, multipart."""
import uuid

import botocore.exceptions
import pytest

from harness import s3util

MiB = 1024 * 1024


_cache = s3util.cache_via


def test_overwrite_through_gateway_invalidates_cached_copy(upstream, gw):
    key = s3util.unique_key("inval")
    old, new = s3util.data(5000, seed="old" + key), s3util.data(7000, seed="new" + key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=old)
    c = _cache(gw, key, old)
    c.put_object(Bucket=gw.bucket, Key=key, Body=new)
    resp = c.get_object(Bucket=gw.bucket, Key=key)
    assert resp["Body"].read() == new
    gw.assert_cache(s3util.headers_of(resp), "MISS")
    tail = c.get_object(Bucket=gw.bucket, Key=key, Range="bytes=6990-6999")
    assert tail["Body"].read() == new[-10:]


def test_delete_through_gateway_then_get_is_404(upstream, gw):
    key = s3util.unique_key("del")
    body = s3util.data(5000, seed=key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    c = _cache(gw, key, body)
    c.delete_object(Bucket=gw.bucket, Key=key)
    with pytest.raises(botocore.exceptions.ClientError) as err:
        c.get_object(Bucket=gw.bucket, Key=key)
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    with pytest.raises(botocore.exceptions.ClientError) as err:
        c.head_object(Bucket=gw.bucket, Key=key)
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_delete_objects_batch_through_gateway_invalidates(upstream, gw):
    # one folder per key: s3rver fails (InternalError) deleting two keys of one folder
    keys = ["batchdel-%s/obj" % uuid.uuid4().hex[:12] for _ in range(3)]
    for k in keys:
        s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=k, Body=k.encode())
        c = _cache(gw, k, k.encode())
    out = c.delete_objects(Bucket=gw.bucket,
                           Delete={"Objects": [{"Key": k} for k in keys], "Quiet": False})
    assert sorted(d["Key"] for d in out.get("Deleted", [])) == sorted(keys)
    for k in keys:
        with pytest.raises(botocore.exceptions.ClientError) as err:
            c.get_object(Bucket=gw.bucket, Key=k)
        assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_copy_object_onto_cached_key_invalidates(upstream, gw):
    src, dst = s3util.unique_key("copysrc"), s3util.unique_key("copydst")
    src_body, dst_body = s3util.data(3000, seed=src), s3util.data(4000, seed=dst)
    up = s3util.upstream_client(upstream)
    up.put_object(Bucket=upstream.bucket, Key=src, Body=src_body)
    up.put_object(Bucket=upstream.bucket, Key=dst, Body=dst_body)
    c = _cache(gw, dst, dst_body)
    c.copy_object(Bucket=gw.bucket, Key=dst, CopySource={"Bucket": gw.bucket, "Key": src})
    assert c.get_object(Bucket=gw.bucket, Key=dst)["Body"].read() == src_body


def test_complete_multipart_upload_onto_cached_key_invalidates(upstream, gw):
    key = s3util.unique_key("mpuinval")
    old = s3util.data(1000, seed="old" + key)
    s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=old)
    c = _cache(gw, key, old)
    part1, part2 = s3util.data(5 * MiB, seed="p1" + key), s3util.data(1234, seed="p2" + key)
    mpu = c.create_multipart_upload(Bucket=gw.bucket, Key=key)
    parts = []
    for n, body in ((1, part1), (2, part2)):
        r = c.upload_part(Bucket=gw.bucket, Key=key, UploadId=mpu["UploadId"], PartNumber=n,
                          Body=body)
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    if upstream.name == "radosgw":  # s3rver has no ListParts
        listed = c.list_parts(Bucket=gw.bucket, Key=key, UploadId=mpu["UploadId"])
        assert [p["PartNumber"] for p in listed["Parts"]] == [1, 2]
    c.complete_multipart_upload(Bucket=gw.bucket, Key=key, UploadId=mpu["UploadId"],
                                MultipartUpload={"Parts": parts})
    assert c.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == part1 + part2


def test_abort_multipart_upload_passes_through(upstream, gw):
    if upstream.name == "s3rver":
        pytest.skip("s3rver has no AbortMultipartUpload or ListParts (MethodNotAllowed)")
    key = s3util.unique_key("mpuabort")
    c = gw.client()
    mpu = c.create_multipart_upload(Bucket=gw.bucket, Key=key)
    c.upload_part(Bucket=gw.bucket, Key=key, UploadId=mpu["UploadId"], PartNumber=1, Body=b"x")
    c.abort_multipart_upload(Bucket=gw.bucket, Key=key, UploadId=mpu["UploadId"])
    with pytest.raises(botocore.exceptions.ClientError) as err:
        c.list_parts(Bucket=gw.bucket, Key=key, UploadId=mpu["UploadId"])
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_get_part_number_passes_through_uncached(upstream, gw):
    """GET ?partNumber=N goes to the upstream, never to the cached whole object.

    Neither s3rver nor radosgw 16 implements partNumber (both send the whole
    object), so the expected answer is whatever the upstream sends directly."""
    key = s3util.unique_key("partget")
    part1, part2 = s3util.data(5 * MiB, seed="p1" + key), s3util.data(2000, seed="p2" + key)
    c = s3util.upstream_client(upstream)
    mpu = c.create_multipart_upload(Bucket=upstream.bucket, Key=key)
    parts = []
    for n, body in ((1, part1), (2, part2)):
        r = c.upload_part(Bucket=upstream.bucket, Key=key, UploadId=mpu["UploadId"],
                          PartNumber=n, Body=body)
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    c.complete_multipart_upload(Bucket=upstream.bucket, Key=key, UploadId=mpu["UploadId"],
                                MultipartUpload={"Parts": parts})
    direct = c.get_object(Bucket=upstream.bucket, Key=key, PartNumber=2)
    want_body = direct["Body"].read()
    want_range = s3util.headers_of(direct).get("content-range")
    g = gw.client()
    assert g.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == part1 + part2
    resp = g.get_object(Bucket=gw.bucket, Key=key, PartNumber=2)
    assert resp["Body"].read() == want_body
    assert s3util.headers_of(resp).get("content-range") == want_range
    gw.assert_cache(s3util.headers_of(resp), "BYPASS")


def test_get_version_id_passes_through_uncached(radosgw, gateway):
    """GET ?versionId= returns that version, not the cached current one (radosgw
    only: s3rver has no versioning)."""
    up = radosgw
    c = s3util.upstream_client(up)
    bucket = "versioned"
    try:
        c.create_bucket(Bucket=bucket)
    except botocore.exceptions.ClientError as err:
        if err.response["Error"]["Code"] != "BucketAlreadyOwnedByYou":
            raise
    c.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    key = s3util.unique_key("ver")
    v1 = c.put_object(Bucket=bucket, Key=key, Body=b"version one")["VersionId"]
    c.put_object(Bucket=bucket, Key=key, Body=b"version two, longer")
    gw = gateway(up)
    g = gw.client()
    for expected in ("MISS", "HIT"):
        resp = g.get_object(Bucket=bucket, Key=key)
        assert resp["Body"].read() == b"version two, longer"
        gw.assert_cache(s3util.headers_of(resp), expected)
    resp = g.get_object(Bucket=bucket, Key=key, VersionId=v1)
    assert resp["Body"].read() == b"version one"
    assert resp["VersionId"] == v1
    gw.assert_cache(s3util.headers_of(resp), "BYPASS")
    head = g.head_object(Bucket=bucket, Key=key, VersionId=v1)
    assert head["ContentLength"] == len(b"version one")
