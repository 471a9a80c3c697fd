"""The x-amz-checksum-* values S3 sends (base64 of the big-endian CRC or of the digest),
written here independently of the gateway: test_integrity.py (fills) and test_hostile_input.py
(aws-chunked trailers) check the gateway against them."""
import base64
import hashlib
import zlib


def _crc_table(poly):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc_table(0x82F63B78)
_CRC64NVME = _crc_table(0x9A6C9329AC4BC9B5)


def _crc(data, table, width):
    mask = (1 << width) - 1
    c = mask
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ mask


def _b64(value, nbytes):
    return base64.b64encode(value.to_bytes(nbytes, "big")).decode()


CHECKSUMS = {
    "crc32": lambda b: _b64(zlib.crc32(b), 4),
    "crc32c": lambda b: _b64(_crc(b, _CRC32C, 32), 4),
    "crc64nvme": lambda b: _b64(_crc(b, _CRC64NVME, 64), 8),
    "sha1": lambda b: base64.b64encode(hashlib.sha1(b).digest()).decode(),
    "sha256": lambda b: base64.b64encode(hashlib.sha256(b).digest()).decode(),
}

# The published check values, so that a wrong helper cannot make a test pass.
assert _crc(b"123456789", _CRC32C, 32) == 0xE3069283
assert _crc(b"123456789", _CRC64NVME, 64) == 0xAE8B14860A799888
