"""A PUT with a streaming SigV4 body (aws-chunked, STREAMING-AWS4-HMAC-SHA256-PAYLOAD).

Older SDKs (Java v1, Go minio-go, boto2-era tools) upload over plain HTTP this
way: every chunk carries its own signature chained from the request's. The
format is AWS's "Signature Version 4, Transferring Payload in Multiple Chunks".
"""
import datetime
import hashlib
import hmac
import http.client
import urllib.parse

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def _signing_key(secret, day, region):
    k = _hmac(("AWS4" + secret).encode(), day)
    k = _hmac(k, region)
    k = _hmac(k, "s3")
    return _hmac(k, "aws4_request")


def put_streaming(endpoint, access_key, secret_key, bucket, key, body, chunk_size=64 * 1024,
                  region="us-east-1"):
    """Uploads body with chunk-signed aws-chunked encoding; returns (status, headers, body)."""
    parsed = urllib.parse.urlsplit(endpoint)
    host = parsed.netloc
    path = "/%s/%s" % (bucket, urllib.parse.quote(key, safe="/~"))
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = now.strftime("%Y%m%d")
    scope = "%s/%s/s3/aws4_request" % (day, region)
    chunks = [body[i:i + chunk_size] for i in range(0, len(body), chunk_size)] + [b""]
    sig_len = 64
    encoded_len = sum(len("%x" % len(c)) + len(";chunk-signature=") + sig_len + 2 + len(c) + 2
                      for c in chunks)
    headers = {
        "host": host,
        "x-amz-date": amz_date,
        "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
        "x-amz-decoded-content-length": str(len(body)),
        "content-encoding": "aws-chunked",
        "content-length": str(encoded_len),
        "content-type": "application/octet-stream",
    }
    names = sorted(headers)
    canonical = "\n".join([
        "PUT", path, "",
        "".join("%s:%s\n" % (n, headers[n]) for n in names),
        ";".join(names),
        "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
    ])
    signing_key = _signing_key(secret_key, day, region)
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    seed = hmac.new(signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (
        "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
        % (access_key, scope, ";".join(names), seed))

    payload = bytearray()
    prev = seed
    for c in chunks:
        chunk_to_sign = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev,
                                   EMPTY_SHA256, hashlib.sha256(c).hexdigest()])
        sig = hmac.new(signing_key, chunk_to_sign.encode(), hashlib.sha256).hexdigest()
        payload += b"%x;chunk-signature=%s\r\n" % (len(c), sig.encode()) + c + b"\r\n"
        prev = sig
    assert len(payload) == encoded_len

    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    try:
        conn.request("PUT", path, body=bytes(payload), headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()
