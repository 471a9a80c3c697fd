/* test_loopback.c - which addresses count as loopback for the admin API's default rule, and how
 * an address is written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>

#include "../../gateway/addr.h"

static bool v4(const char *text)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, text, &sin.sin_addr), 1);
    return gw_addr_is_loopback((struct sockaddr *)&sin);
}

static bool v6(const char *text)
{
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
    assert_int_equal(inet_pton(AF_INET6, text, &sin6.sin6_addr), 1);
    return gw_addr_is_loopback((struct sockaddr *)&sin6);
}

static void whole_127_slash_8_is_loopback(void **state)
{
    assert_true(v4("127.0.0.1"));
    assert_true(v4("127.255.3.9"));
}

static void other_ipv4_addresses_are_not(void **state)
{
    assert_false(v4("0.0.0.0"));
    assert_false(v4("10.0.0.1"));
    assert_false(v4("128.0.0.1"));
    assert_false(v4("126.255.255.255"));
}

static void ipv6_loopback_and_mapped_127_are_loopback(void **state)
{
    assert_true(v6("::1"));
    assert_true(v6("::ffff:127.0.0.1"));
}

static void other_ipv6_addresses_are_not(void **state)
{
    assert_false(v6("::"));
    assert_false(v6("fe80::1"));
    assert_false(v6("::ffff:10.0.0.1"));
    assert_false(v6("::2"));
}

static void null_address_is_not_loopback(void **state)
{
    assert_false(gw_addr_is_loopback(NULL));
}

/* The address as text: how the access log and the slow-client log name a client. */
static void mapped_ipv4_is_written_as_ipv4(void **state)
{
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
    struct sockaddr_in sin = {.sin_family = AF_INET};
    char text[INET6_ADDRSTRLEN];
    assert_int_equal(inet_pton(AF_INET6, "::ffff:127.0.0.1", &sin6.sin6_addr), 1);
    gw_addr_string((struct sockaddr *)&sin6, text, sizeof(text));
    assert_string_equal(text, "127.0.0.1");
    assert_int_equal(inet_pton(AF_INET6, "::1", &sin6.sin6_addr), 1);
    gw_addr_string((struct sockaddr *)&sin6, text, sizeof(text));
    assert_string_equal(text, "::1");
    assert_int_equal(inet_pton(AF_INET, "10.1.2.3", &sin.sin_addr), 1);
    gw_addr_string((struct sockaddr *)&sin, text, sizeof(text));
    assert_string_equal(text, "10.1.2.3");
    gw_addr_string(NULL, text, sizeof(text));
    assert_string_equal(text, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(whole_127_slash_8_is_loopback),
        cmocka_unit_test(other_ipv4_addresses_are_not),
        cmocka_unit_test(ipv6_loopback_and_mapped_127_are_loopback),
        cmocka_unit_test(other_ipv6_addresses_are_not),
        cmocka_unit_test(null_address_is_not_loopback),
        cmocka_unit_test(mapped_ipv4_is_written_as_ipv4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
