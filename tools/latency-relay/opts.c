/*
 * opts.c - latency-relay's command line, parsed and range-checked here only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "lrelay.h"

#define MAX_DELAY_MS 60000.0
#define MIN_WINDOW   (64u * 1024)
#define MAX_WINDOW   (1024u * 1024 * 1024)
#define DEF_WINDOW   (4u * 1024 * 1024)
#define MIN_RATE     (1024ull)
#define MAX_RATE     (64ull * 1024 * 1024 * 1024)

sc_code lr_parse_addr(const char *s, struct sockaddr_storage *out, socklen_t *len)
{
    char host[64];
    const char *colon;
    const char *h = s;
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':')
            return SC_EINVAL;
        h = s + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL)
            return SC_EINVAL;
        hlen = (size_t)(colon - s);
        if (memchr(s, ':', hlen) != NULL)
            return SC_EINVAL; /* an IPv6 host needs its brackets */
    }
    if (hlen == 0 || hlen >= sizeof(host))
        return SC_EINVAL;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    const char *p = colon + 1;
    if (*p < '0' || *p > '9' || strlen(p) > 5)
        return SC_EINVAL;
    char *end = NULL;
    long port = strtol(p, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535)
        return SC_EINVAL;
    memset(out, 0, sizeof(*out));
    struct sockaddr_in *v4 = (struct sockaddr_in *)out;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof(*v4);
        return SC_OK;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*v6);
        return SC_OK;
    }
    return SC_EINVAL;
}

sc_code lr_parse_ms(const char *s, int64_t *ns)
{
    if (*s < '0' || *s > '9')
        return SC_EINVAL;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v >= 0) || v > MAX_DELAY_MS)
        return SC_EINVAL;
    *ns = (int64_t)llround(v * 1e6);
    return SC_OK;
}

/* Bytes with an optional K/M/G (binary) suffix, in [min, max]. */
static sc_code parse_bytes(const char *s, unsigned long long min, unsigned long long max,
                           unsigned long long *out)
{
    if (*s < '0' || *s > '9')
        return SC_EINVAL;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return SC_EINVAL;
    unsigned long long mult = 1;
    if (*end == 'K' || *end == 'k')
        mult = 1024;
    else if (*end == 'M' || *end == 'm')
        mult = 1024 * 1024;
    else if (*end == 'G' || *end == 'g')
        mult = 1024 * 1024 * 1024;
    else if (*end != '\0')
        return SC_EINVAL;
    if (mult != 1 && end[1] != '\0')
        return SC_EINVAL;
    if (v > max / mult)
        return SC_EINVAL;
    v *= mult;
    if (v < min || v > max)
        return SC_EINVAL;
    *out = v;
    return SC_OK;
}

sc_code lr_parse_window(const char *s, size_t *out)
{
    unsigned long long v = 0;
    sc_code rc = parse_bytes(s, MIN_WINDOW, MAX_WINDOW, &v);
    if (rc == SC_OK)
        *out = (size_t)v;
    return rc;
}

sc_code lr_parse_rate(const char *s, uint64_t *out)
{
    unsigned long long v = 0;
    sc_code rc = parse_bytes(s, MIN_RATE, MAX_RATE, &v);
    if (rc == SC_OK)
        *out = v;
    return rc;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: latency-relay --listen HOST:PORT --target HOST:PORT [--delay-ms D]\n"
            "                     [--window BYTES] [--rate BYTES] [--no-connect-rtt] [--quiet]\n"
            "Relays TCP connections from --listen to --target, holding every byte D ms\n"
            "(one way, each direction) before passing it on: a request waits D, its answer D.\n"
            "  --delay-ms D       one-way delay, 0..60000, fractions allowed (default 0)\n"
            "  --window BYTES     most bytes held per direction of a connection, like a TCP\n"
            "                     window: a connection moves at most BYTES per D\n"
            "                     (64K..1G, K/M/G suffixes; default 4M)\n"
            "  --rate BYTES       most bytes a second each direction of one connection moves,\n"
            "                     as a cloud store's per-connection throughput (1K..64G, K/M/G\n"
            "                     suffixes; default: no bound)\n"
            "  --no-connect-rtt   do not charge a new connection one round trip (2 D) before\n"
            "                     its first byte, as TCP's handshake would\n"
            "  --quiet            no start and exit lines on stderr\n"
            "Hosts are numeric IPv4 or [IPv6]. SIGINT/SIGTERM close everything and exit 0;\n"
            "SIGUSR1 prints the counters on stderr.\n");
}

int lr_opts_parse(int argc, char **argv, struct lr_opts *o, FILE *out, FILE *err)
{
    static const struct option longs[] = {
        {"listen", required_argument, NULL, 'l'},
        {"target", required_argument, NULL, 't'},
        {"delay-ms", required_argument, NULL, 'd'},
        {"window", required_argument, NULL, 'w'},
        {"no-connect-rtt", no_argument, NULL, 'n'},
        {"quiet", no_argument, NULL, 'q'},
        {"rate", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool have_listen = false, have_target = false;
    memset(o, 0, sizeof(*o));
    o->window = DEF_WINDOW;
    o->connect_rtt = true;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (lr_parse_addr(optarg, &o->listen, &o->listen_len) != SC_OK) {
                fprintf(err, "latency-relay: --listen %s: want HOST:PORT, numeric host\n", optarg);
                return 2;
            }
            have_listen = true;
            break;
        case 't':
            if (lr_parse_addr(optarg, &o->target, &o->target_len) != SC_OK) {
                fprintf(err, "latency-relay: --target %s: want HOST:PORT, numeric host\n", optarg);
                return 2;
            }
            have_target = true;
            break;
        case 'd':
            if (lr_parse_ms(optarg, &o->delay_ns) != SC_OK) {
                fprintf(err, "latency-relay: --delay-ms %s: want 0..60000\n", optarg);
                return 2;
            }
            break;
        case 'w':
            if (lr_parse_window(optarg, &o->window) != SC_OK) {
                fprintf(err, "latency-relay: --window %s: want 64K..1G\n", optarg);
                return 2;
            }
            break;
        case 'r':
            if (lr_parse_rate(optarg, &o->rate) != SC_OK) {
                fprintf(err, "latency-relay: --rate %s: want 1K..64G bytes a second\n", optarg);
                return 2;
            }
            break;
        case 'n':
            o->connect_rtt = false;
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'h':
            usage(out);
            return 1;
        default:
            fprintf(err, "latency-relay: unknown or incomplete option %s\n", argv[optind - 1]);
            usage(err);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(err, "latency-relay: unexpected argument %s\n", argv[optind]);
        return 2;
    }
    if (!have_listen || !have_target) {
        fprintf(err, "latency-relay: --listen and --target are required\n");
        usage(err);
        return 2;
    }
    return 0;
}
