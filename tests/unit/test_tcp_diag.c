/*
 * test_tcp_diag.c - a TCP connection's queues by its ends (common/tcp_diag.h), on real
 * loopback connections: bytes sent and not read show as the receiver's unread, and go when
 * read; an unknown or closed end is not found; IPv6 too when the host has ::1.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../common/tcp_diag.h"

static int diag = -1; /* the tests' sock_diag socket (main) */

/* A connected loopback pair of family: *client connected to *server, accepted on *listener
 * (closed when listener is NULL). False when the host has no loopback address of that family. */
static bool connect_pair(int family, int *client, int *server, int *listener)
{
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof(*a);
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        len = sizeof(*a);
    }
    int ls = socket(family, SOCK_STREAM, 0);
    assert_true(ls >= 0);
    if (bind(ls, (struct sockaddr *)&ss, len) != 0) {
        close(ls);
        return false;
    }
    assert_int_equal(listen(ls, 1), 0);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&ss, &len), 0);
    *client = socket(family, SOCK_STREAM, 0);
    assert_int_equal(connect(*client, (struct sockaddr *)&ss, len), 0);
    *server = accept(ls, NULL, NULL);
    assert_true(*server >= 0);
    if (listener != NULL)
        *listener = ls;
    else
        close(ls);
    return true;
}

/* Waits (up to a second) until the receiver's queues read unread bytes and the sender's
 * unacked none: the loopback acknowledges at once, but not synchronously. */
static void assert_queues_settle(const struct sc_tcp_ends *sender,
                                 const struct sc_tcp_ends *receiver, uint32_t want_unread)
{
    uint32_t unacked = 1, unread = 0;
    struct sc_tcp_sock s;
    for (int i = 0; i < 100; i++) {
        assert_int_equal(sc_tcp_look(diag, sender, &s), SC_OK);
        unacked = s.unacked;
        assert_int_equal(sc_tcp_look(diag, receiver, &s), SC_OK);
        unread = s.unread;
        if (unacked == 0 && unread == want_unread)
            break;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    assert_int_equal(unacked, 0);
    assert_int_equal(unread, want_unread);
}

static void queues_follow_bytes_sent_and_read(int family)
{
    int client = -1, server = -1;
    if (!connect_pair(family, &client, &server, NULL)) {
        skip();
        return;
    }
    struct sc_tcp_ends srv, cli;
    assert_int_equal(sc_tcp_ends_of(server, &srv), SC_OK);
    assert_int_equal(sc_tcp_ends_of(client, &cli), SC_OK);
    struct sc_tcp_ends peer = sc_tcp_ends_peer(&srv); /* the client, as the server sees it */
    assert_memory_equal(&peer, &cli, sizeof(cli));
    char buf[5000];
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(send(server, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
    assert_queues_settle(&srv, &peer, sizeof(buf));
    size_t got = 0;
    while (got < sizeof(buf)) {
        ssize_t n = recv(client, buf, sizeof(buf) - got, 0);
        assert_true(n > 0);
        got += (size_t)n;
    }
    assert_queues_settle(&srv, &peer, 0);
    close(client);
    close(server);
}

static void ipv4_queues_follow_bytes_sent_and_read(void **state)
{
    queues_follow_bytes_sent_and_read(AF_INET);
}

static void ipv6_queues_follow_bytes_sent_and_read(void **state)
{
    queues_follow_bytes_sent_and_read(AF_INET6);
}

static void closed_or_unknown_end_is_not_found(void **state)
{
    int client = -1, server = -1, ls = -1;
    assert_true(connect_pair(AF_INET, &client, &server, &ls));
    struct sc_tcp_ends srv;
    assert_int_equal(sc_tcp_ends_of(server, &srv), SC_OK);
    struct sc_tcp_ends peer = sc_tcp_ends_peer(&srv);
    struct sc_tcp_sock s = {0};
    struct sc_tcp_ends other = peer;
    struct sockaddr_in *port = (struct sockaddr_in *)&other.local;
    port->sin_port = htons((uint16_t)(ntohs(port->sin_port) ^ 0x5555)); /* nobody's */
    assert_int_equal(sc_tcp_look(diag, &other, &s), SC_ENOTFOUND);
    /* The server's end of a connection it does not have: its port's listener is not it. */
    struct sc_tcp_ends server_side = sc_tcp_ends_peer(&other);
    assert_int_equal(sc_tcp_look(diag, &server_side, &s), SC_ENOTFOUND);
    close(ls);
    /* The client closes first: its socket is gone (the server's, which did not close, stays). */
    close(client);
    sc_code rc = SC_OK;
    for (int i = 0; i < 100 && rc == SC_OK; i++) {
        rc = sc_tcp_look(diag, &peer, &s);
        if (rc == SC_OK)
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    /* (a client that closes first lingers in FIN_WAIT2, with nothing queued) */
    assert_true(rc == SC_ENOTFOUND || (rc == SC_OK && s.unread == 0));
    close(server);
}

/* Whether cookie is among the destroyed sockets' cookies on dfd, waiting up to a second. */
static bool seen_destroyed(int dfd, uint64_t cookie)
{
    uint64_t got[64];
    size_t n = 0;
    for (int i = 0; i < 100; i++) {
        assert_int_equal(sc_tcp_destroyed(dfd, got, 64, &n), SC_OK);
        for (size_t k = 0; k < n; k++)
            if (got[k] == cookie)
                return true;
        if (n == 0)
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return false;
}

/* A socket that left the tables is not gone: the client half-closes after the server sent its
 * bytes and closed, its socket goes to TCP_CLOSE (in no table: not found), and every byte can
 * still be read. Only when its process closes it is it destroyed, which sc_tcp_destroyed()
 * tells, by the cookie sc_tcp_look() gave. */
static void a_socket_in_no_table_still_reads_until_destroyed(void **state)
{
    int dfd = sc_tcp_destroy_open();
    assert_true(dfd >= 0);
    int client = -1, server = -1;
    assert_true(connect_pair(AF_INET, &client, &server, NULL));
    struct sc_tcp_ends srv;
    assert_int_equal(sc_tcp_ends_of(server, &srv), SC_OK);
    struct sc_tcp_ends peer = sc_tcp_ends_peer(&srv);
    struct sc_tcp_sock s = {0};
    char buf[5000];
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(send(server, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
    assert_int_equal(sc_tcp_look(diag, &peer, &s), SC_OK);
    uint64_t cookie = s.cookie;
    close(server);
    nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    assert_int_equal(shutdown(client, SHUT_WR), 0);
    sc_code rc = SC_OK;
    for (int i = 0; i < 100 && rc == SC_OK; i++) {
        rc = sc_tcp_look(diag, &peer, &s);
        if (rc == SC_OK)
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    assert_int_equal(rc, SC_ENOTFOUND);
    assert_false(seen_destroyed(dfd, cookie));
    size_t got = 0;
    for (ssize_t n; (n = recv(client, buf, sizeof(buf), 0)) > 0;)
        got += (size_t)n;
    assert_int_equal(got, sizeof(buf)); /* not found, yet every byte read */
    close(client);
    assert_true(seen_destroyed(dfd, cookie));
    close(dfd);
}

static void a_socket_that_is_not_tcp_has_no_ends(void **state)
{
    struct sc_tcp_ends e;
    int fds[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    assert_int_equal(sc_tcp_ends_of(fds[0], &e), SC_EINVAL);
    close(fds[0]);
    close(fds[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ipv4_queues_follow_bytes_sent_and_read),
        cmocka_unit_test(ipv6_queues_follow_bytes_sent_and_read),
        cmocka_unit_test(closed_or_unknown_end_is_not_found),
        cmocka_unit_test(a_socket_in_no_table_still_reads_until_destroyed),
        cmocka_unit_test(a_socket_that_is_not_tcp_has_no_ends),
    };
    diag = sc_tcp_diag_open();
    if (diag < 0)
        return 1;
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    close(diag);
    return failed;
}
