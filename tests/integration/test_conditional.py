"""Conditional GETs (If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since).

On a hit the gateway answers them itself, with S3's rules; the expected
statuses are S3's (radosgw agrees; s3rver ignores If-Match and
If-Unmodified-Since, which does not matter on a hit).
"""
import datetime

import botocore.exceptions
import pytest

from harness import s3util

DAY = datetime.timedelta(days=1)


def _status(c, bucket, key, **cond):
    """The status of a GET with the given conditions, and the response headers."""
    try:
        resp = c.get_object(Bucket=bucket, Key=key, **cond)
        resp["Body"].read()
        return resp["ResponseMetadata"]["HTTPStatusCode"], s3util.headers_of(resp)
    except botocore.exceptions.ClientError as err:
        meta = err.response["ResponseMetadata"]
        return meta["HTTPStatusCode"], meta.get("HTTPHeaders", {})


def _cached_object(upstream, gw):
    key = s3util.unique_key("cond")
    body = s3util.data(3000, seed=key)
    put = s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key, Body=body)
    c = gw.client()
    first = c.get_object(Bucket=gw.bucket, Key=key)
    assert first["Body"].read() == body
    return c, key, put["ETag"], first["LastModified"]


# name -> (function of (etag, last_modified) giving the conditions, expected status)
CASES = {
    "if_none_match_same_etag_is_304": (lambda e, lm: dict(IfNoneMatch=e), 304),
    "if_none_match_other_etag_is_200": (lambda e, lm: dict(IfNoneMatch='"0123abc"'), 200),
    "if_match_wrong_etag_is_412": (lambda e, lm: dict(IfMatch='"0123abc"'), 412),
    "if_match_same_etag_is_200": (lambda e, lm: dict(IfMatch=e), 200),
    "if_modified_since_future_is_304": (lambda e, lm: dict(IfModifiedSince=lm + DAY), 304),
    "if_modified_since_last_modified_is_304": (lambda e, lm: dict(IfModifiedSince=lm), 304),
    "if_modified_since_past_is_200": (lambda e, lm: dict(IfModifiedSince=lm - DAY), 200),
    "if_unmodified_since_past_is_412": (lambda e, lm: dict(IfUnmodifiedSince=lm - DAY), 412),
    "if_unmodified_since_future_is_200": (lambda e, lm: dict(IfUnmodifiedSince=lm + DAY), 200),
    # S3: If-Match true wins over a false If-Unmodified-Since.
    "if_match_true_and_unmodified_since_false_is_200":
        (lambda e, lm: dict(IfMatch=e, IfUnmodifiedSince=lm - DAY), 200),
    # S3: If-None-Match true (other ETag) wins over a false If-Modified-Since.
    "if_none_match_true_and_modified_since_false_is_200":
        (lambda e, lm: dict(IfNoneMatch='"0123abc"', IfModifiedSince=lm + DAY), 200),
}


@pytest.mark.parametrize("name", list(CASES))
def test_conditional_get_on_hit(upstream, gw, name):
    make, want = CASES[name]
    c, key, etag, last_modified = _cached_object(upstream, gw)
    status, hdrs = _status(c, gw.bucket, key, **make(etag, last_modified))
    assert status == want
    gw.assert_cache(hdrs, "HIT")
    if status == 304:
        # RFC 9110 15.4.5: a 304 carries the ETag a 200 would have; S3 sends it,
        # s3rver and radosgw do not, the gateway must on a hit.
        assert hdrs.get("etag") == etag


def test_if_none_match_on_miss_is_304(upstream, gw):
    key = s3util.unique_key("condmiss")
    put = s3util.upstream_client(upstream).put_object(Bucket=upstream.bucket, Key=key,
                                                      Body=b"x" * 10)
    status, _ = _status(gw.client(), gw.bucket, key, IfNoneMatch=put["ETag"])
    assert status == 304


def test_conditional_head_on_hit(upstream, gw):
    c, key, etag, last_modified = _cached_object(upstream, gw)
    for cond, want in [(dict(IfNoneMatch=etag), 304), (dict(IfMatch='"0123abc"'), 412),
                       (dict(IfMatch=etag), 200)]:
        try:
            resp = c.head_object(Bucket=gw.bucket, Key=key, **cond)
            status = resp["ResponseMetadata"]["HTTPStatusCode"]
        except botocore.exceptions.ClientError as err:
            status = err.response["ResponseMetadata"]["HTTPStatusCode"]
        assert status == want, cond
