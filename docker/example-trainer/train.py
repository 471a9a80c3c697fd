#!/usr/bin/env python3
"""An example trainer that reads its dataset through s3cached, as a real one would.

    train.py seed    puts a small synthetic dataset in the bucket (straight to the upstream)
    train.py train   reads it for a few shuffled epochs through the gateway and reports, per
                     epoch, how many reads were cache hits (the X-Cache header)

Only boto3 and the standard library. Configuration comes from the environment, so the same
script runs in docker/compose.yaml, in the Kubernetes examples and in the tests:

    AWS_ENDPOINT_URL      where to read (the gateway), e.g. http://127.0.0.1:8080
    SEED_ENDPOINT_URL     where `seed` writes (the upstream itself); default AWS_ENDPOINT_URL
    DATASET_BUCKET        bucket (default "datasets")
    DATASET_PREFIX        key prefix (default "demo/train/")
    DATASET_OBJECTS       objects `seed` writes (default 64)
    DATASET_OBJECT_SIZE   bytes per object (default 65536)
    EPOCHS                epochs `train` reads (default 3)
    SHUFFLE_SEED          seed of the per-epoch shuffle (default 42)
    S3CACHED_ADMIN_TOKEN_FILE   if set, `train --manifest` posts a manifest to warm the cache
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION   as usual

The endpoint is passed to boto3 explicitly, so boto3 releases older than 1.28 (which ignore
AWS_ENDPOINT_URL) behave the same. The gateway does not check the trainer's signature: through it,
any key pair works; the gateway signs upstream requests with its own credentials.

`train --require-hits` exits 1 unless every read after the first epoch was a cache HIT: in the
compose demo the trainer container succeeding means the cache works.
"""
import argparse
import hashlib
import json
import os
import random
import sys
import time
import urllib.request

import boto3
import botocore.config
import botocore.exceptions


def env(name, default):
    value = os.environ.get(name, "")
    return value if value else default


def client(endpoint):
    cfg = botocore.config.Config(
        s3={"addressing_style": "path"},  # the gateway serves path-style (README)
        retries={"max_attempts": 5, "mode": "standard"},
        connect_timeout=5, read_timeout=60)
    return boto3.client("s3", endpoint_url=endpoint,
                        region_name=env("AWS_REGION", env("AWS_DEFAULT_REGION", "us-east-1")),
                        config=cfg)


def object_body(key, size):
    """Deterministic bytes for a key, so a read can be checked without a second copy."""
    out = bytearray()
    block = hashlib.sha256(key.encode()).digest()
    while len(out) < size:
        out += block
        block = hashlib.sha256(block).digest()
    return bytes(out[:size])


def keys_of(s3, bucket, prefix):
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return sorted(keys)


def seed(args):
    endpoint = env("SEED_ENDPOINT_URL", env("AWS_ENDPOINT_URL", ""))
    if not endpoint:
        sys.exit("seed: set SEED_ENDPOINT_URL (the upstream) or AWS_ENDPOINT_URL")
    s3 = client(endpoint)
    try:
        s3.head_bucket(Bucket=args.bucket)
    except botocore.exceptions.ClientError:
        s3.create_bucket(Bucket=args.bucket)
    have = set(keys_of(s3, args.bucket, args.prefix))
    wrote = 0
    for i in range(args.objects):
        key = "%ssample-%05d.bin" % (args.prefix, i)
        if key not in have:
            s3.put_object(Bucket=args.bucket, Key=key, Body=object_body(key, args.object_size))
            wrote += 1
    print("seed: s3://%s/%s holds %d objects of %d bytes (%d written now)" % (
        args.bucket, args.prefix, args.objects, args.object_size, wrote), flush=True)


def post_manifest(endpoint, args):
    """Tells the gateway what the epochs will read, so it prefetches (docs/manifests.md)."""
    path = env("S3CACHED_ADMIN_TOKEN_FILE", "")
    if not path:
        sys.exit("train --manifest: set S3CACHED_ADMIN_TOKEN_FILE")
    with open(path) as f:
        token = f.readline().strip()
    body = json.dumps({"bucket": args.bucket, "prefix": args.prefix, "num_epochs": args.epochs,
                       "shuffle": True, "seed": args.shuffle_seed}).encode()
    req = urllib.request.Request(endpoint.rstrip("/") + "/_s3cached/manifests", data=body,
                                 method="POST", headers={"Content-Type": "application/json",
                                                         "Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=30) as r:
        reply = json.loads(r.read())
    print("manifest: %s (%s)" % (reply.get("id"), reply.get("state")), flush=True)


def train(args):
    endpoint = env("AWS_ENDPOINT_URL", "")
    if not endpoint:
        sys.exit("train: set AWS_ENDPOINT_URL to the gateway, e.g. http://127.0.0.1:8080")
    s3 = client(endpoint)
    if args.manifest:
        post_manifest(endpoint, args)
    keys = keys_of(s3, args.bucket, args.prefix)
    if not keys:
        sys.exit("train: no objects under s3://%s/%s (run `train.py seed` first)" % (
            args.bucket, args.prefix))
    misses_after_first = 0
    for epoch in range(args.epochs):
        if epoch > 0 and args.require_hits:
            # An epoch boundary (a real trainer evaluates, checkpoints...): the gateway stores
            # the last fill of an epoch just after its last byte went out.
            time.sleep(0.5)
        order = list(keys)
        random.Random(args.shuffle_seed + epoch).shuffle(order)
        counts = {"HIT": 0, "MISS": 0, "BYPASS": 0, "none": 0}
        nbytes = 0
        start = time.monotonic()
        for key in order:
            resp = s3.get_object(Bucket=args.bucket, Key=key)
            body = resp["Body"].read()
            size = resp["ContentLength"]
            if len(body) != size or (args.check and body != object_body(key, size)):
                sys.exit("train: %s came back wrong (%d bytes)" % (key, len(body)))
            nbytes += len(body)
            xc = resp["ResponseMetadata"]["HTTPHeaders"].get("x-cache", "none").upper()
            counts[xc if xc in counts else "none"] += 1
        took = time.monotonic() - start
        print("epoch %d: %d objects, %.1f MiB in %.2f s (%.1f MiB/s); X-Cache HIT=%d MISS=%d "
              "BYPASS=%d" % (epoch, len(order), nbytes / 2**20, took,
                             nbytes / 2**20 / max(took, 1e-9), counts["HIT"], counts["MISS"],
                             counts["BYPASS"]), flush=True)
        if epoch > 0:
            misses_after_first += len(order) - counts["HIT"]
    if args.require_hits and misses_after_first:
        sys.exit("train: %d reads after the first epoch were not cache hits" % misses_after_first)
    print("train: done", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("command", choices=["seed", "train"])
    p.add_argument("--bucket", default=env("DATASET_BUCKET", "datasets"))
    p.add_argument("--prefix", default=env("DATASET_PREFIX", "demo/train/"))
    p.add_argument("--objects", type=int, default=int(env("DATASET_OBJECTS", "64")))
    p.add_argument("--object-size", type=int, default=int(env("DATASET_OBJECT_SIZE", "65536")))
    p.add_argument("--epochs", type=int, default=int(env("EPOCHS", "3")))
    p.add_argument("--shuffle-seed", type=int, default=int(env("SHUFFLE_SEED", "42")))
    p.add_argument("--manifest", action="store_true",
                   help="post a manifest first, so the gateway prefetches the epochs")
    p.add_argument("--require-hits", action="store_true",
                   help="exit 1 unless every read after the first epoch was a cache hit")
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="do not compare the bytes read with what `seed` wrote")
    args = p.parse_args()
    seed(args) if args.command == "seed" else train(args)


if __name__ == "__main__":
    main()
