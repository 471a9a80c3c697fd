/*
 * test_fleet_members.c - who is in the fleet (fleet/url.c, members.c, local.c, resolve.c):
 * peer URLs parsed strictly into one canonical form, hostile lists refused, this gateway found
 * by --self or by its addresses, --peers-dns resolved to every record (localhost here, no
 * server needed), and the resolver thread stopped at once by fleet_free.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/clock.h"
#include "../../common/hash.h"
#include "../../fleet/fleet_int.h"

#define SECRET "fleet-secret-0123456789"

static sc_code start(const char *peers, const char *dns, const char *self, fleet **f)
{
    struct fleet_config cfg = {
        .peers = peers,
        .peers_dns = dns,
        .self = self,
        .secret = (const unsigned char *)SECRET,
        .secret_len = strlen(SECRET),
    };
    return fleet_start(&cfg, f);
}

static void good_urls_become_canonical(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"http://127.0.0.1:9001", "http://127.0.0.1:9001"},
        {"http://127.0.0.1:9001/", "http://127.0.0.1:9001"},
        {"HTTPS://Node-1.Example:443", "https://node-1.example:443"},
        {"http://[::1]:9000", "http://[::1]:9000"},
        {"http://[0:0:0::1]:9000", "http://[::1]:9000"},
        {"http://[FD00::2]:65535", "http://[fd00::2]:65535"},
        {"http://gw:1", "http://gw:1"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fleet_url u;
        assert_int_equal(fleet_url_parse(cases[i].in, strlen(cases[i].in), &u), SC_OK);
        assert_string_equal(u.url, cases[i].out);
    }
    /* the longest URL that fits, and one byte more */
    char url[128];
    snprintf(url, sizeof(url), "http://%s:9001",
             "a123456789012345678901234567890123456789"
             "0123456789012345678901234567890123456789012");
    assert_int_equal(strlen(url), FLEET_URL_MAX - 1);
    struct fleet_url u;
    assert_int_equal(fleet_url_parse(url, strlen(url), &u), SC_OK);
    assert_string_equal(u.url, url);
    snprintf(url, sizeof(url), "http://%s:9001",
             "a123456789012345678901234567890123456789"
             "01234567890123456789012345678901234567890123");
    assert_int_equal(fleet_url_parse(url, strlen(url), &u), SC_EINVAL);
}

static void hostile_urls_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "http://",
        "http://127.0.0.1",
        "http://127.0.0.1:",
        "http://127.0.0.1:0",
        "http://127.0.0.1:65536",
        "http://127.0.0.1:08080",
        "http://127.0.0.1:80a",
        "http://127.0.0.1:-80",
        "http://127.0.0.1:+80",
        "ftp://a:1",
        "a:1",
        "//a:1",
        "http://:80",
        "http://[::1:80",
        "http://[::1]80",
        "http://[zz]:80",
        "http://[]:80",
        "http://[fe80::1%eth0]:80",
        "http://user@a:80",
        "http://a:80/path",
        "http://a:80?x",
        "http://a:80#f",
        "http://a b:80",
        "http://300.1.1.1:80",
        "http://1.2.3:80",
        "http://-a:80",
        "http://.a:80",
        "http://a:80//",
        "http:/a:80",
        "http://a:1:2",
        "http://a\r:80",
        "http://a:80 x",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct fleet_url u;
        if (fleet_url_parse(bad[i], strlen(bad[i]), &u) != SC_EINVAL)
            fail_msg("accepted %s", bad[i]);
        fleet *f = NULL;
        assert_int_equal(start(bad[i], NULL, NULL, &f), SC_EINVAL);
        assert_null(f);
    }
    /* a 300-byte name */
    char longname[400];
    memset(longname, 'a', sizeof(longname));
    memcpy(longname, "http://", 7);
    snprintf(longname + 307, sizeof(longname) - 307, ":80");
    struct fleet_url u;
    assert_int_equal(fleet_url_parse(longname, strlen(longname), &u), SC_EINVAL);
}

static void hostile_lists_and_configs_are_refused(void **state)
{
    (void)state;
    static const char *const bad_lists[] = {
        "http://127.0.0.1:1,,http://127.0.0.2:1",
        "http://127.0.0.1:1,",
        ",http://127.0.0.1:1",
        "http://127.0.0.1:1,http://127.0.0.1:1",
        "http://127.0.0.1:1,HTTP://127.0.0.1:1/",
        "http://127.0.0.1:1;http://127.0.0.2:1",
        " , ",
    };
    fleet *f = NULL;
    for (size_t i = 0; i < sizeof(bad_lists) / sizeof(bad_lists[0]); i++)
        assert_int_equal(start(bad_lists[i], NULL, "http://127.0.0.1:1", &f), SC_EINVAL);
    /* both, or neither */
    assert_int_equal(start("http://127.0.0.1:1", "localhost:1", "http://127.0.0.1:1", &f),
                     SC_EINVAL);
    assert_int_equal(start(NULL, NULL, "http://127.0.0.1:1", &f), SC_EINVAL);
    assert_int_equal(fleet_start(NULL, &f), SC_EINVAL);
    /* --self malformed, or not in the list */
    assert_int_equal(start("http://127.0.0.1:1", NULL, "127.0.0.1:1", &f), SC_EINVAL);
    assert_int_equal(start("http://127.0.0.1:1", NULL, "http://127.0.0.1:2", &f), SC_EINVAL);
    /* a secret too short, or none */
    struct fleet_config cfg = {.peers = "http://127.0.0.1:1",
                               .self = "http://127.0.0.1:1",
                               .secret = (const unsigned char *)"0123456789abcde",
                               .secret_len = FLEET_SECRET_MIN - 1};
    assert_int_equal(fleet_start(&cfg, &f), SC_EINVAL);
    cfg.secret = NULL;
    cfg.secret_len = 32;
    assert_int_equal(fleet_start(&cfg, &f), SC_EINVAL);
    cfg.secret = (const unsigned char *)"0123456789abcdef";
    cfg.secret_len = FLEET_SECRET_MIN;
    assert_int_equal(fleet_start(&cfg, &f), SC_OK);
    fleet_free(f);
    /* a malformed NAME:PORT */
    static const char *const bad_dns[] = {"localhost",     "localhost:",          ":80",
                                          "local host:80", "localhost:0",         "localhost:99999",
                                          "[::1:80",       "http://localhost:80", ""};
    for (size_t i = 0; i < sizeof(bad_dns) / sizeof(bad_dns[0]); i++)
        assert_int_equal(start(NULL, bad_dns[i], NULL, &f), SC_EINVAL);
    assert_null(f);
    fleet_free(NULL);
}

/* A list of n distinct URLs on TEST-NET-2 (never this host), the first on 127.0.0.1. */
static char *list_of(size_t n)
{
    char *s = calloc(n, 40);
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(s + len, "%shttp://%s:%zu", i ? "," : "",
                               i ? "198.51.100.1" : "127.0.0.1", 1000 + i);
    return s;
}

static void at_most_max_peers(void **state)
{
    (void)state;
    fleet *f = NULL;
    char *list = list_of(FLEET_MAX_PEERS);
    assert_int_equal(start(list, NULL, "http://127.0.0.1:1000", &f), SC_OK);
    assert_int_equal(fleet_peers(f, NULL, 0), FLEET_MAX_PEERS);
    fleet_free(f);
    free(list);
    list = list_of(FLEET_MAX_PEERS + 1);
    assert_int_equal(start(list, NULL, "http://127.0.0.1:1000", &f), SC_EINVAL);
    free(list);
}

static void the_peers_are_listed_in_url_order(void **state)
{
    (void)state;
    fleet *f = NULL;
    assert_int_equal(start(" http://127.0.0.3:9001 ,http://[::1]:9001,\thttp://127.0.0.2:9001/",
                           NULL, "HTTP://127.0.0.2:9001", &f),
                     SC_OK);
    assert_string_equal(fleet_self(f), "http://127.0.0.2:9001");
    struct fleet_peer_info p[4];
    assert_int_equal(fleet_peers(f, p, 4), 3);
    assert_string_equal(p[0].url, "http://127.0.0.2:9001");
    assert_string_equal(p[1].url, "http://127.0.0.3:9001");
    assert_string_equal(p[2].url, "http://[::1]:9001");
    assert_true(p[0].self && !p[1].self && !p[2].self);
    for (int i = 0; i < 3; i++)
        assert_true(p[i].state == FLEET_UP && p[i].requests == 0 && p[i].down_for == 0);
    /* a smaller cap copies fewer and still counts them all */
    assert_int_equal(fleet_peers(f, p, 1), 3);
    fleet_free(f);
}

static void self_is_found_by_this_hosts_address(void **state)
{
    (void)state;
    fleet *f = NULL;
    assert_int_equal(start("http://198.51.100.7:9001,http://127.0.0.1:9001", NULL, NULL, &f),
                     SC_OK);
    assert_string_equal(fleet_self(f), "http://127.0.0.1:9001");
    fleet_free(f);
    /* a name resolved here */
    assert_int_equal(start("http://198.51.100.7:9001,http://localhost:9001", NULL, NULL, &f),
                     SC_OK);
    assert_string_equal(fleet_self(f), "http://localhost:9001");
    fleet_free(f);
    /* none of them, or two (several gateways on one host: say which with --self) */
    assert_int_equal(start("http://198.51.100.7:9001,http://198.51.100.8:9001", NULL, NULL, &f),
                     SC_EINVAL);
    assert_int_equal(start("http://127.0.0.1:9001,http://127.0.0.1:9002", NULL, NULL, &f),
                     SC_EINVAL);
    assert_int_equal(
        start("http://127.0.0.1:9001,http://127.0.0.1:9002", NULL, "http://127.0.0.1:9002", &f),
        SC_OK);
    assert_string_equal(fleet_self(f), "http://127.0.0.1:9002");
    fleet_free(f);
}

/* How many addresses localhost has here (127.0.0.1, and ::1 where /etc/hosts says so). */
static size_t localhost_records(bool *has_v6)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    size_t n = 0;
    *has_v6 = false;
    assert_int_equal(getaddrinfo("localhost", "9555", &hints, &res), 0);
    for (struct addrinfo *r = res; r; r = r->ai_next) {
        n++;
        *has_v6 = *has_v6 || r->ai_family == AF_INET6;
    }
    freeaddrinfo(res);
    return n;
}

static void dns_gives_every_record(void **state)
{
    (void)state;
    bool v6;
    size_t n = localhost_records(&v6);
    assert_true(n == 1 || n == 2);
    fleet *f = NULL;
    assert_int_equal(start(NULL, "localhost:9555", "http://127.0.0.1:9555", &f), SC_OK);
    struct fleet_peer_info p[4];
    assert_int_equal(fleet_peers(f, p, 4), n);
    assert_string_equal(p[0].url, "http://127.0.0.1:9555");
    assert_true(p[0].self);
    if (v6) {
        assert_string_equal(p[1].url, "http://[::1]:9555");
        assert_false(p[1].self); /* --self names the one entry that is this gateway */
    }
    fleet_free(f);
    /* without --self every record with one of this host's addresses is this gateway */
    assert_int_equal(start(NULL, "LocalHost:9555", NULL, &f), SC_OK);
    assert_string_equal(fleet_self(f), "http://127.0.0.1:9555");
    assert_int_equal(fleet_peers(f, p, 4), n);
    for (size_t i = 0; i < n; i++)
        assert_true(p[i].self);
    assert_true(fleet_owns(f, 1) && fleet_owns(f, 2));
    fleet_free(f);
}

static void dns_without_this_gateway_leaves_it_alone(void **state)
{
    (void)state;
    fleet *f = NULL;
    struct fleet_peer_info p[4];
    /* the records do not hold --self: this gateway owns everything until they do */
    assert_int_equal(start(NULL, "localhost:9555", "http://127.0.0.2:9555", &f), SC_OK);
    assert_string_equal(fleet_self(f), "http://127.0.0.2:9555");
    assert_int_equal(fleet_peers(f, p, 4), 1);
    assert_true(p[0].self);
    assert_string_equal(p[0].url, "http://127.0.0.2:9555");
    for (uint64_t name = 0; name < 1000; name++)
        assert_true(fleet_owns(f, sc_hash_mix(name)));
    fleet_free(f);
    /* a name that does not resolve (yet) is not an error either */
    assert_int_equal(start(NULL, "nonexistent.invalid:9555", NULL, &f), SC_OK);
    assert_string_equal(fleet_self(f), "");
    assert_int_equal(fleet_peers(f, p, 4), 1);
    struct fleet_owner o;
    fleet_owner_of(f, 42, &o);
    assert_true(o.self);
    fleet_free(f);
}

static void free_stops_the_resolver_at_once(void **state)
{
    (void)state;
    struct fleet_config cfg = {.peers_dns = "localhost:9555",
                               .self = "http://127.0.0.1:9555",
                               .secret = (const unsigned char *)SECRET,
                               .secret_len = strlen(SECRET),
                               .resolve_ms = 60000};
    fleet *f = NULL;
    assert_int_equal(fleet_start(&cfg, &f), SC_OK);
    int64_t t0 = sc_now_ms();
    fleet_free(f);
    assert_true(sc_now_ms() - t0 < 1000);
}

/* Re-resolution every millisecond while readers ask for owners: the same answer never changes
 * the generation, and nothing a reader sees is freed under it (ASan). */
static void reresolution_swaps_views_under_readers(void **state)
{
    (void)state;
    struct fleet_config cfg = {.peers_dns = "localhost:9555",
                               .self = "http://127.0.0.1:9555",
                               .secret = (const unsigned char *)SECRET,
                               .secret_len = strlen(SECRET),
                               .resolve_ms = 1};
    fleet *f = NULL;
    assert_int_equal(fleet_start(&cfg, &f), SC_OK);
    uint64_t g = fleet_generation(f);
    int64_t until = sc_now_ms() + 200;
    uint64_t name = 0;
    while (sc_now_ms() < until) {
        struct fleet_owner o;
        fleet_owner_of(f, sc_hash_mix(++name), &o);
        assert_true(o.url[0] != '\0');
    }
    assert_int_equal(fleet_generation(f), g);
    fleet_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_urls_become_canonical),
        cmocka_unit_test(hostile_urls_are_refused),
        cmocka_unit_test(hostile_lists_and_configs_are_refused),
        cmocka_unit_test(at_most_max_peers),
        cmocka_unit_test(the_peers_are_listed_in_url_order),
        cmocka_unit_test(self_is_found_by_this_hosts_address),
        cmocka_unit_test(dns_gives_every_record),
        cmocka_unit_test(dns_without_this_gateway_leaves_it_alone),
        cmocka_unit_test(free_stops_the_resolver_at_once),
        cmocka_unit_test(reresolution_swaps_views_under_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
