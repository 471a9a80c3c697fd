"""The harness itself: what every other test relies on."""
from harness import proc


def test_free_port_never_hands_out_a_port_twice():
    """A fleet takes six ports in a row; one repeat gives two listeners one port (CI saw a
    gateway's client port handed to the next gateway as its peer port)."""
    ports = [proc.free_port() for _ in range(2000)]
    assert len(set(ports)) == len(ports), len(ports) - len(set(ports))
