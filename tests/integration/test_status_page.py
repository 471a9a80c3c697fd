"""The status page at /_s3cached/: one self-contained HTML page under a strict
Content-Security-Policy, rendered by Debian's headless Chromium against a gateway in front
of a real upstream (its numbers must be the gateway's), and gated like the rest of the admin
API (the bearer token, asked for by the page itself).

Screenshots land in $S3CACHED_IT_OUTPUT (default build/test-output/) and their paths are
printed; they are also recorded as the test's "screenshot" properties (junit XML).
"""
import base64
import hashlib
import json
import os
import re
import time
import urllib.error
import urllib.request
import uuid

import pytest

from harness import chromium
from harness import s3util
from harness.gateway import REPO

TOKEN = "it-status-token-" + uuid.uuid4().hex
OUT_DIR = os.environ.get("S3CACHED_IT_OUTPUT") or os.path.join(REPO, "build", "test-output")
PAGE_PATHS = ("/_s3cached/", "/_s3cached/index.html", "/_s3cached")


def get(gw, path, token=None, method="GET"):
    """(status, lower-cased headers, body bytes) of one request to the gateway."""
    req = urllib.request.Request(gw.endpoint + path, method=method)
    if token is not None:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def admin_json(gw, path, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(gw.endpoint + "/_s3cached/" + path, data=data,
                                 method="POST" if data else "GET")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def csp_directives(header):
    out = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def element_hash(html, tag):
    """'sha256-<base64>' of the content of the page's one <tag> element, as CSP hashes it."""
    found = re.findall(r"<%s>(.*?)</%s>" % (tag, tag), html, re.S)
    assert len(found) == 1, "want one <%s> element, found %d" % (tag, len(found))
    return "'sha256-%s'" % base64.b64encode(hashlib.sha256(found[0].encode()).digest()).decode()


def save_screenshot(page, name, capsys, record_property):
    os.makedirs(OUT_DIR, exist_ok=True)
    path = page.screenshot(os.path.join(OUT_DIR, name))
    record_property("screenshot", path)
    with capsys.disabled():
        print("\nstatus page screenshot: %s" % path)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    return path


@pytest.fixture
def browser():
    if chromium.binary() is None:
        why = "Debian's chromium is not installed (tools/install-deps.sh installs it)"
        if os.environ.get("CI"):
            pytest.fail(why + "; CI must run this test", pytrace=False)
        pytest.skip(why)
    b = chromium.Chromium().start()
    try:
        yield b
    finally:
        b.close()


def polls(page):
    return int(page.evaluate("document.body.dataset.polls || '0'"))


def wait_polls(page, n, timeout=20):
    """Waits until the page has rendered n successful polls in all."""
    page.wait_for("Number(document.body.dataset.polls || '0') >= %d" % n, timeout=timeout)


# ---- the page as served ----------------------------------------------------------------


def test_page_is_self_contained_under_a_strict_csp(s3rver, gateway):
    gw = gateway(s3rver)
    gw.require_real()
    status, headers, body = get(gw, "/_s3cached/")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "no-store"
    html = body.decode("utf-8")

    csp = csp_directives(headers["content-security-policy"])
    assert csp["default-src"] == ["'none'"]
    assert csp["script-src"] == [element_hash(html, "script")]
    assert csp["style-src"] == [element_hash(html, "style")]
    assert csp["connect-src"] == ["'self'"]
    assert csp["img-src"] == ["data:"]  # the empty favicon only
    assert csp["frame-ancestors"] == ["'none'"] and csp["form-action"] == ["'none'"]
    assert "unsafe" not in headers["content-security-policy"]

    # Nothing in the page points anywhere else: no absolute URL, no src, only the data: icon.
    assert not re.search(r"https?:|//[a-z0-9]", html, re.I), "an absolute URL in the page"
    assert not re.search(r"\bsrc\s*=", html, re.I)
    assert re.findall(r"\b(?:href|action)\s*=\s*\"([^\"]*)\"", html, re.I) == ["data:,"]
    assert "url(" not in html and "@import" not in html
    assert html.count("<script") == 1 and html.count("<style") == 1
    assert not re.search(r"<[a-z]+[^>]*\sstyle\s*=", html), "a style attribute (CSP refuses it)"

    # The page's other addresses serve the same bytes; other methods are refused.
    for path in PAGE_PATHS[1:]:
        st, _, other = get(gw, path)
        assert st == 200 and other == body, path
    st, _, head = get(gw, "/_s3cached/", method="HEAD")
    assert st == 200 and head == b""
    assert get(gw, "/_s3cached/", method="POST")[0] == 405
    assert get(gw, "/_s3cached/index.htm")[0] == 404


def test_buckets_endpoint_counts_object_reads_per_bucket(s3rver, gateway):
    gw = gateway(s3rver)
    gw.require_real()
    key = s3util.unique_key("status-buckets")
    body = s3util.data(3000, seed=key)
    s3util.upstream_client(s3rver).put_object(Bucket=s3rver.bucket, Key=key, Body=body)
    client = gw.client()
    for _ in range(3):
        assert client.get_object(Bucket=gw.bucket, Key=key)["Body"].read() == body
    client.head_object(Bucket=gw.bucket, Key=key)
    gw.stats_when(lambda s: s["hits"] >= 3)
    got = admin_json(gw, "buckets")
    assert got["max_buckets"] == 64
    rows = {r["bucket"]: r for r in got["buckets"]}
    assert rows[gw.bucket] == {"bucket": gw.bucket, "hits": 3, "misses": 1, "bypasses": 0,
                               "bytes": 3 * len(body)}
    assert got["other"] == {"hits": 0, "misses": 0, "bypasses": 0, "bytes": 0}


# ---- in a browser ------------------------------------------------------------------------


def seed(up, prefix, n, size=20000):
    client = s3util.upstream_client(up)
    keys = ["%s/%03d.bin" % (prefix, i) for i in range(n)]
    for k in keys:
        client.put_object(Bucket=up.bucket, Key=k, Body=s3util.data(size, seed=k))
    return keys


def cell_texts(page, selector):
    return page.evaluate(
        "Array.from(document.querySelectorAll(%s)).map(function (td) { return td.textContent; })"
        % json.dumps(selector))


def chart_pixels(page):
    """How many pixels of the hit-ratio canvas are drawn in the line's blue."""
    return page.evaluate("""(function () {
        var c = document.getElementById('chart');
        var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = 0;
        for (var i = 0; i < d.length; i += 4)
            if (d[i + 3] > 200 && d[i + 2] > 180 && d[i] < 110) n++;
        return n;
    })()""")


def test_page_renders_the_gateway_numbers_in_chromium(s3rver, gateway, browser, capsys,
                                                      record_property):
    gw = gateway(s3rver)
    gw.require_real()
    prefix = s3util.unique_key("status-page")
    keys = seed(s3rver, prefix, 8)
    client = gw.client()

    def read(*which):
        for i in which:
            client.get_object(Bucket=gw.bucket, Key=keys[i])["Body"].read()

    read(0, 1, 2, 3)  # 4 misses
    read(0, 1)  # 2 hits
    # A manifest over six of them and one key that does not exist: two prefetches, one failure.
    created = admin_json(gw, "manifests", {"bucket": gw.bucket, "name": "status-it",
                                           "keys": keys[:6] + [prefix + "/missing.bin"]})
    mid = created["id"]
    deadline = time.monotonic() + 60
    while True:
        prog = admin_json(gw, "manifests/" + mid)
        if prog["objects_cached"] + prog["objects_failed"] >= 7 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert prog["objects_cached"] == 6 and prog["objects_failed"] == 1, prog

    page = browser.new_page(1280, 900)
    page.navigate(gw.endpoint + "/_s3cached/")
    wait_polls(page, 1)
    # Reads while the page watches, over two poll intervals: 100 %, then 2 of 3.
    read(0, 1, 2, 3, 4)
    gw.stats_when(lambda s: s["hits"] >= 7)
    wait_polls(page, polls(page) + 1)
    read(6, 6, 5)
    gw.stats_when(lambda s: s["hits"] >= 9)
    wait_polls(page, polls(page) + 2)

    stats = gw.stats()
    buckets = admin_json(gw, "buckets")
    prog = admin_json(gw, "manifests/" + mid)
    wait_polls(page, polls(page) + 1)  # a render after those answers; nothing reads meanwhile

    hits, misses = stats["hits"], stats["misses"]
    assert (hits, misses) == (9, 5), stats
    assert page.evaluate("document.getElementById('hit-ratio').textContent") == \
        "%.1f %%" % (100.0 * hits / (hits + misses)) == "64.3 %"
    assert page.evaluate("document.getElementById('hits').textContent") == "{:,}".format(hits)
    assert page.evaluate("document.getElementById('misses').textContent") == "{:,}".format(misses)
    assert page.evaluate("document.getElementById('objects').textContent") == \
        "{:,}".format(stats["objects"])
    assert chart_pixels(page) > 50, "no hit-ratio line drawn"

    row = cell_texts(page, 'tr[data-id="%s"] td' % mid)
    assert row, "manifest %s is not on the page" % mid
    assert row[0] == "%s (status-it)" % mid
    assert row[2] == prog["state"]
    assert row[4] == "%d / %d" % (prog["objects_cached"], prog["objects_total"]) == "6 / 7"
    assert row[6] == str(prog["objects_failed"]) == "1"

    mine = [r for r in buckets["buckets"] if r["bucket"] == gw.bucket][0]
    brow = cell_texts(page, 'tr[data-bucket="%s"] td' % gw.bucket)
    assert brow, "bucket %s is not in the top buckets" % gw.bucket
    assert brow[0] == gw.bucket
    assert brow[1] == "{:,}".format(mine["hits"] + mine["misses"] + mine["bypasses"])
    assert brow[3] == "{:,}".format(mine["hits"]) and brow[4] == "{:,}".format(mine["misses"])

    # The page asked the gateway for its own four things and nothing else, and the browser
    # refused nothing (a CSP violation or a script error would be listed).
    urls = [u for u, _ in page.requests]
    assert all(u.startswith(gw.endpoint + "/_s3cached/") or u.startswith("data:")
               for u in urls), urls
    assert {u[len(gw.endpoint):] for u in urls if not u.startswith("data:")} == {
        "/_s3cached/", "/_s3cached/stats", "/_s3cached/manifests", "/_s3cached/buckets"}
    assert page.problems() == []
    save_screenshot(page, "status_page.png", capsys, record_property)


def test_page_answers_401_and_asks_for_the_token_it_then_sends_as_bearer(
        s3rver, gateway, browser, capsys, record_property):
    gw = gateway(s3rver, admin_token=TOKEN)
    gw.require_real()
    _, _, page_bytes = get(gw, "/_s3cached/", token=TOKEN)
    for path in PAGE_PATHS:
        status, headers, body = get(gw, path)
        # Refused like the rest of the admin API, but with the page: it holds no data, and
        # it is what asks for the token (a browser cannot send a bearer token by itself).
        assert status == 401, path
        assert headers["www-authenticate"].startswith("Bearer ")
        assert headers["content-type"] == "text/html; charset=utf-8"
        assert "script-src 'sha256-" in headers["content-security-policy"]
        assert body == page_bytes
        assert get(gw, path, token=TOKEN[:-1] + "x")[0] == 401
        assert get(gw, path, token=TOKEN)[0] == 200
    for api in ("stats", "buckets", "manifests"):
        status, headers, body = get(gw, "/_s3cached/" + api)
        assert status == 401 and json.loads(body)["error"] == "Unauthorized", api
        assert headers["www-authenticate"].startswith("Bearer ")
    assert get(gw, "/_s3cached/", method="POST")[0] == 401  # JSON, like any other refusal

    page = browser.new_page(1280, 900)
    page.navigate(gw.endpoint + "/_s3cached/")
    page.wait_for("!document.getElementById('login').hidden")
    assert page.evaluate("document.getElementById('dash').hidden") is True
    save_screenshot(page, "status_page_token.png", capsys, record_property)

    def submit(token):
        page.evaluate("(function () { document.getElementById('token').value = %s;"
                      " document.getElementById('login-form').requestSubmit(); })()"
                      % json.dumps(token))

    submit("wrong-" + TOKEN)
    page.wait_for("document.getElementById('login-error').textContent.indexOf('refused') >= 0")
    assert page.evaluate("sessionStorage.getItem('s3cached-admin-token')") is None
    submit(TOKEN)
    wait_polls(page, 1)
    assert page.evaluate("document.getElementById('dash').hidden") is False
    assert page.evaluate("sessionStorage.getItem('s3cached-admin-token')") == TOKEN
    sent = [(u, h) for u, h in page.requests if u.endswith("/_s3cached/stats")]
    assert sent and sent[-1][1].get("Authorization") == "Bearer " + TOKEN
    assert not any(TOKEN in u for u, _ in page.requests), "the token went into a URL"

    # A reload gets the 401 page again, which goes straight on with the tab's token.
    page.navigate(gw.endpoint + "/_s3cached/")
    wait_polls(page, 1)
    assert page.evaluate("document.getElementById('login').hidden") is True
    problems = [p for p in page.problems() if "401" not in p]  # the refused loads are logged
    assert problems == []


def test_page_shows_the_fleet_and_hides_it_without_one(s3rver, gateway, browser, capsys,
                                                       record_property, tmp_path):
    """A gateway of a fleet shows itself and each peer (up, or down for a while after it
    failed); a gateway alone shows no fleet card."""
    alone = gateway(s3rver)
    alone.require_real()
    page = browser.new_page(1280, 900)
    page.navigate(alone.endpoint + "/_s3cached/")
    wait_polls(page, 1)
    assert page.evaluate("document.getElementById('card-fleet').hidden") is True

    secret = tmp_path / "fleet-secret"
    secret.write_text("0123456789abcdef0123456789abcdef\n")
    secret.chmod(0o600)
    from harness import proc
    me, dead = proc.free_port(), proc.free_port()
    urls = ["http://127.0.0.1:%d" % me, "http://127.0.0.1:%d" % dead]
    gw = gateway(s3rver, port=me, extra_args=["--peers", ",".join(urls), "--self", urls[0],
                                              "--fleet-secret-file", str(secret)])
    gw.require_real()
    page = browser.new_page(1280, 900)
    page.navigate(gw.endpoint + "/_s3cached/")
    wait_polls(page, 1)
    wait_polls(page, polls(page) + 1)
    assert page.evaluate("document.getElementById('card-fleet').hidden") is False
    fleet = gw.stats()["fleet"]
    for p in fleet["peers"]:
        row = cell_texts(page, 'tr[data-peer="%s"] td' % p["url"])
        assert row, "peer %s is not on the page" % p["url"]
        assert row[0] == p["url"] + (" (this gateway)" if p["self"] else "")
        assert row[1].startswith(p["state"]), (row, p)
    summary = page.evaluate("document.getElementById('fleet-summary').textContent")
    assert ("this gateway: " + urls[0]) in summary, summary
    assert page.problems() == []
    save_screenshot(page, "status_page_fleet.png", capsys, record_property)
