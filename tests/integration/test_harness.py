"""The harness itself: what every other test relies on, and the tools the benchmarks rely on."""
import os
import subprocess

from harness import proc, s3util
from harness.checksums import CHECKSUMS

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_free_port_never_hands_out_a_port_twice():
    """A fleet takes six ports in a row; one repeat gives two listeners one port (CI saw a
    gateway's client port handed to the next gateway as its peer port)."""
    ports = [proc.free_port() for _ in range(2000)]
    assert len(set(ports)) == len(ports), len(ports) - len(set(ports))


def test_the_benchs_checksum_tool_agrees_with_the_harness(tmp_path):
    """build/s3cached-checksum gives the emulated cloud (bench/lib/cloud.sh,
    CLOUD_CHECKSUMS=crc64nvme) the CRC-64/NVME S3 would send; checked here against the
    harness's own table implementation, over lengths around the folding's 64-byte steps."""
    tool = os.path.join(REPO, "build", "s3cached-checksum")  # make all
    files, want = [], {}
    for n in (0, 1, 63, 64, 65, 1000, 110 * 1024 + 7):
        p = tmp_path / ("f%d" % n)
        body = s3util.data(n, seed="sum-%d" % n)
        p.write_bytes(body)
        files.append(str(p))
        want[str(p)] = CHECKSUMS["crc64nvme"](body)
    out = subprocess.run([tool] + files, capture_output=True, text=True, check=True).stdout
    got = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in out.splitlines()}
    assert got == want
