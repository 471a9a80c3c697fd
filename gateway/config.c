/*
 * config.c - command line and environment parsing (see config.h).
 *
 * One table describes every option: its flag, its environment twin, its
 * type and bounds, and its --help line. Defaults are set first, the
 * environment overrides them, and the command line overrides both.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "../common/log.h"
#include "../common/secret_file.h"
#include "../upstream/origin.h"

enum opt_type {
    OPT_STR,
    OPT_SIZE,
    OPT_UINT,
    OPT_DURATION,
    OPT_BOOL,
    OPT_LISTEN,
    OPT_LOGLEVEL,
    OPT_ACTION
};

struct opt {
    const char *flag; /* without the leading "--" */
    const char *env;  /* environment twin, or NULL */
    enum opt_type type;
    size_t offset;     /* into struct gw_config */
    uint64_t min, max; /* bounds for OPT_SIZE and OPT_UINT */
    const char *arg;   /* argument name for --help, NULL for flags */
    const char *help;
};

#define OFF(field) offsetof(struct gw_config, field)
#define KIB        1024ull
#define MIB        (1024ull * KIB)
#define GIB        (1024ull * MIB)

static const struct opt options[] = {
    {"listen", "S3CACHED_LISTEN", OPT_LISTEN, 0, 0, 0, "HOST:PORT",
     "address to serve S3 on (default 127.0.0.1:8080; without --client-credentials anyone who "
     "reaches it reads with the gateway's credentials)"},
    {"upstream", "S3CACHED_UPSTREAM", OPT_STR, OFF(upstream), 0, 0, "URL",
     "S3 endpoint to cache (default https://s3.REGION.amazonaws.com)"},
    {"region", "S3CACHED_REGION", OPT_STR, OFF(region), 0, 0, "NAME",
     "region for signing (default $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1)"},
    {"cache-dir", "S3CACHED_CACHE_DIR", OPT_STR, OFF(cache_dir), 0, 0, "DIR",
     "where the LMDB cache lives (default ./s3cached-cache)"},
    {"cache-size", "S3CACHED_CACHE_SIZE", OPT_SIZE, OFF(cache_size), MIB, 1ull << 50, "SIZE",
     "most object bytes to keep, e.g. 512M, 20G (default 1G)"},
    {"policy", "S3CACHED_POLICY", OPT_STR, OFF(policy), 0, 0, "NAME",
     "eviction policy: s3fifo, lru, fixed, importance or clairvoyant (default s3fifo; see "
     "docs/policies/)"},
    {"max-object-size", "S3CACHED_MAX_OBJECT_SIZE", OPT_SIZE, OFF(max_object_size), 0, 1ull << 50,
     "SIZE", "larger objects stream through uncached (default: no cap)"},
    {"block-size", "S3CACHED_BLOCK_SIZE", OPT_SIZE, OFF(block_size), MIB, 64 * MIB, "SIZE",
     "objects larger than this are cached as aligned blocks of this size, fetched and evicted "
     "one by one (default 8M, the part size of the AWS CLI, boto3 and the CRT)"},
    {"fetch-parallelism", "S3CACHED_FETCH_PARALLELISM", OPT_UINT, OFF(fetch_parallelism), 1,
     GW_FETCH_PARALLELISM_MAX, "N",
     "blocks of a large object fetched at once for one reader, ahead of it (default 4)"},
    {"vhost-domain", "S3CACHED_VHOST_DOMAIN", OPT_STR, OFF(vhost_domain), 0, 0, "NAME",
     "accept virtual-hosted-style requests for BUCKET.NAME (default: path-style only)"},
    {"threads", "S3CACHED_THREADS", OPT_UINT, OFF(threads), 1, 256, "N",
     "HTTP worker threads (default: number of CPUs)"},
    {"max-connections", "S3CACHED_MAX_CONNECTIONS", OPT_UINT, OFF(max_connections), 1, 100000, "N",
     "concurrent client connections (default 1000)"},
    {"connection-timeout", "S3CACHED_CONNECTION_TIMEOUT", OPT_UINT, OFF(conn_timeout), 1, 3600,
     "SECONDS",
     "close a client connection idle this long (each byte restarts it; see --min-body-rate "
     "for slow readers) (default 60)"},
    {"header-timeout", "S3CACHED_HEADER_TIMEOUT", OPT_UINT, OFF(header_timeout), 0, 3600, "SECONDS",
     "close a connection whose request line and headers are not all in this long after their "
     "first byte, however steadily they trickle (slowloris); also the window of "
     "--min-body-rate for request bodies (default 20; 0: no bound)"},
    {"min-body-rate", "S3CACHED_MIN_BODY_RATE", OPT_SIZE, OFF(min_body_rate), 0, GIB, "BYTES",
     "close a connection whose request body arrives, or whose response is taken, slower than "
     "BYTES a second, averaged over each --header-timeout (request) or --connection-timeout "
     "(response) window, not counting time the gateway itself makes it wait (default 1K; 0: no "
     "bound)"},
    {"chunk-size", "S3CACHED_CHUNK_SIZE", OPT_SIZE, OFF(chunk_size), 4 * KIB, 64 * MIB, "SIZE",
     "bytes per stored chunk (default 256K)"},
    {"no-verify-checksums", "S3CACHED_NO_VERIFY_CHECKSUMS", OPT_BOOL, OFF(verify_checksums), 0, 0,
     NULL, "serve hits without checking each chunk's CRC32C (and run no scrubber)"},
    {"scrub-rate", "S3CACHED_SCRUB_RATE", OPT_SIZE, OFF(scrub_rate), 0, 64 * GIB, "BYTES",
     "bytes a second the background scrubber checks against their CRC32C, every cached chunk "
     "and block in turn, read or not (default 8M; 0: no scrubber)"},
    {"zero-copy", "S3CACHED_ZERO_COPY", OPT_BOOL, OFF(zero_copy), 0, 0, NULL,
     "send a hit whose body is one stored chunk or block with sendfile from the cache file, "
     "to clients in this network namespace (measured no cheaper over loopback: "
     "docs/operations.md)"},
    {"upstream-retries", "S3CACHED_UPSTREAM_RETRIES", OPT_UINT, OFF(upstream_retries), 0, 10, "N",
     "retries of idempotent upstream requests (default 3)"},
    {"upstream-connections", "S3CACHED_UPSTREAM_CONNECTIONS", OPT_UINT, OFF(upstream_connections),
     1, 65536, "N",
     "connections at once to the upstream, and to each fleet peer; more requests wait their "
     "turn in the order they came (default 256)"},
    {"upstream-connect-timeout", "S3CACHED_UPSTREAM_CONNECT_TIMEOUT", OPT_UINT,
     OFF(upstream_connect_timeout), 1, 600, "SECONDS",
     "give up connecting after this long (default 5)"},
    {"upstream-stall-timeout", "S3CACHED_UPSTREAM_STALL_TIMEOUT", OPT_UINT,
     OFF(upstream_stall_timeout), 1, 3600, "SECONDS",
     "abort an upstream transfer that moves no byte for this long (default 30)"},
    {"insecure-upstream", "S3CACHED_INSECURE_UPSTREAM", OPT_BOOL, OFF(allow_insecure_tls), 0, 0,
     NULL, "do not verify the upstream's TLS certificate (never in production)"},
    {"prefetch-concurrency", "S3CACHED_PREFETCH_CONCURRENCY", OPT_UINT, OFF(prefetch_concurrency),
     1, 1024, "N", "manifest prefetches in flight at once (default 32)"},
    {"prefetch-buffer", "S3CACHED_PREFETCH_BUFFER", OPT_SIZE, OFF(prefetch_buffer), 0, 16 * GIB,
     "SIZE",
     "memory for prefetched objects downloaded and waiting to be written to the cache, whose "
     "--prefetch-concurrency slots go to the next fetches (default 64M; 0: a prefetch keeps its "
     "slot until its object is stored)"},
    {"log-format", "S3CACHED_LOG_FORMAT", OPT_STR, OFF(log_format), 0, 0, "FORMAT",
     "json (one object per line, the default) or text"},
    {"log-file", "S3CACHED_LOG_FILE", OPT_STR, OFF(log_file), 0, 0, "FILE",
     "append the log to FILE instead of stderr; SIGHUP reopens it (log rotation)"},
    {"access-log", "S3CACHED_ACCESS_LOG", OPT_BOOL, OFF(access_log), 0, 0, NULL,
     "log one line per request: id, client, method, bucket, key, status, bytes, cache, duration"},
    {"shutdown-timeout", "S3CACHED_SHUTDOWN_TIMEOUT", OPT_UINT, OFF(shutdown_timeout), 0, 3600,
     "SECONDS",
     "on SIGTERM, wait this long for requests in flight before closing (default 8: below "
     "docker stop's 10 s)"},
    {"admin-token", "S3CACHED_ADMIN_TOKEN", OPT_STR, OFF(admin_token), 0, 0, "TOKEN",
     "bearer token the admin API (/_s3cached/) requires; without one it answers only loopback "
     "clients (prefer the file or the environment: arguments show in ps)"},
    {"admin-token-file", "S3CACHED_ADMIN_TOKEN_FILE", OPT_STR, OFF(admin_token_file), 0, 0, "FILE",
     "read the admin token from the first line of FILE"},
    {"client-credentials", "S3CACHED_CLIENT_CREDENTIALS", OPT_STR, OFF(client_credentials), 0, 0,
     "FILE",
     "verify every S3 request's SigV4 signature against the key pairs in FILE (JSON, see "
     "docs/security.md); without it requests are not verified"},
    {"identity", "S3CACHED_IDENTITY", OPT_STR, OFF(identity), 0, 0, "MODE",
     "gateway (default): upstream requests use the gateway's credentials; client: each "
     "client's own key pair (needs --client-credentials)"},
    {"allow-anonymous", "S3CACHED_ALLOW_ANONYMOUS", OPT_BOOL, OFF(allow_anonymous), 0, 0, NULL,
     "with --client-credentials, also admit unsigned requests: they go upstream unsigned and get "
     "what the bucket gives anonymous users"},
    {"allow-anonymous-on-network", "S3CACHED_ALLOW_ANONYMOUS_ON_NETWORK", OPT_BOOL,
     OFF(allow_anonymous_on_network), 0, 0, NULL,
     "confirm --allow-anonymous on a listener that is not loopback (refused otherwise)"},
    {"auth-cache-ttl", "S3CACHED_AUTH_CACHE_TTL", OPT_DURATION, OFF(auth_cache_ttl), 0, 86400,
     "DURATION",
     "how long the upstream's answer to \"may this client read this object\" is remembered "
     "before a cached copy is served to it again (default 60s; 0: ask every time)"},
    {"auth-cache-size", "S3CACHED_AUTH_CACHE_SIZE", OPT_UINT, OFF(auth_cache_size), 16, 10000000,
     "N", "most authorization answers remembered (default 10000)"},
    {"peers", "S3CACHED_PEERS", OPT_STR, OFF(peers), 0, 0, "URL,URL,...",
     "the gateways of the fleet, this one included, as they reach each other (e.g. "
     "http://10.0.0.1:8080,http://10.0.0.2:8080): a miss asks the owner of the name first "
     "(docs/fleet.md; needs --fleet-secret-file)"},
    {"peers-dns", "S3CACHED_PEERS_DNS", OPT_STR, OFF(peers_dns), 0, 0, "NAME:PORT",
     "the fleet is every A/AAAA record of NAME (a Kubernetes headless Service), at PORT, "
     "re-resolved every few seconds (instead of --peers)"},
    {"peers-dns-interval", "S3CACHED_PEERS_DNS_INTERVAL", OPT_UINT, OFF(peers_dns_interval), 1,
     3600, "SECONDS", "how often --peers-dns is resolved again (default 5)"},
    {"self", "S3CACHED_SELF", OPT_STR, OFF(self), 0, 0, "URL",
     "this gateway's URL as its peers reach it (default: the peer whose address is one of "
     "this host's)"},
    {"fleet-secret-file", "S3CACHED_FLEET_SECRET_FILE", OPT_STR, OFF(fleet_secret_file), 0, 0,
     "FILE",
     "the secret every gateway of the fleet shares (first line, at least 16 bytes; a file "
     "others may write is refused): peer requests are signed with it, and requests that are "
     "not are refused"},
    {"fleet-listen", "S3CACHED_FLEET_LISTEN", OPT_LISTEN, OFF(fleet_listen_host), 0, 0, "HOST:PORT",
     "also listen here for peer requests, and only for signed ones (default: peers use "
     "--listen)"},
    {"fleet-copy", "S3CACHED_FLEET_COPY", OPT_STR, OFF(fleet_copy), 0, 0, "MODE",
     "what a gateway keeps of what a peer gave it: none (default: the fleet holds the most "
     "distinct bytes), hot (names asked of a peer before, recently) or all"},
    {"peer-timeout", "S3CACHED_PEER_TIMEOUT", OPT_UINT, OFF(peer_timeout_ms), 1, 60000, "MS",
     "give up connecting to a peer after this many milliseconds and read from the bucket "
     "(default 50)"},
    {"revalidate-after", "S3CACHED_REVALIDATE_AFTER", OPT_DURATION, OFF(revalidate_after), 0,
     10ull * 365 * 86400, "DURATION",
     "ask the upstream whether a hit older than this changed (If-None-Match) before serving it, "
     "e.g. 30s, 10m, 1h, 7d (default 0: serve until evicted or invalidated)"},
    {"log-level", "S3CACHED_LOG_LEVEL", OPT_LOGLEVEL, OFF(log_level), 0, 0, "LEVEL",
     "error, warn, info or debug (default info)"},
    {"help", NULL, OPT_ACTION, OFF(show_help), 0, 0, NULL, "show this help"},
    {"version", NULL, OPT_ACTION, OFF(show_version), 0, 0, NULL, "show the version"},
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

/* A number with an optional unit suffix: the suffix letters and what each multiplies by. */
struct unit {
    const char *letters;
    uint64_t factor;
};

/* Parses digits then at most one unit of units; *rest points past the unit. */
static sc_code parse_with_unit(const char *s, const struct unit *units, uint64_t *out,
                               const char **rest)
{
    if (s == NULL || *s < '0' || *s > '9')
        return SC_EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return SC_EINVAL;
    uint64_t factor = 1;
    for (const struct unit *u = units; u->letters != NULL; u++)
        if (*end != '\0' && strchr(u->letters, *end) != NULL) {
            factor = u->factor;
            end++;
            break;
        }
    if (v > UINT64_MAX / factor)
        return SC_EINVAL;
    *out = v * factor;
    *rest = end;
    return SC_OK;
}

sc_code gw_config_parse_duration(const char *s, uint64_t *seconds)
{
    static const struct unit units[] = {{"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {NULL, 0}};
    const char *rest = NULL;
    if (parse_with_unit(s, units, seconds, &rest) != SC_OK || *rest != '\0')
        return SC_EINVAL;
    return SC_OK;
}

sc_code gw_config_parse_size(const char *s, uint64_t *out)
{
    static const struct unit units[] = {
        {"kK", KIB}, {"mM", MIB}, {"gG", GIB}, {"tT", 1024 * GIB}, {NULL, 0}};
    const char *rest = NULL;
    if (parse_with_unit(s, units, out, &rest) != SC_OK)
        return SC_EINVAL;
    if (rest > s && *rest == 'i' && strchr("kKmMgGtT", rest[-1]) != NULL)
        rest++; /* KiB, MiB, ... */
    if (*rest == 'B' || *rest == 'b')
        rest++;
    return *rest == '\0' ? SC_OK : SC_EINVAL;
}

static sc_code parse_uint(const char *s, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return SC_EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return SC_EINVAL;
    *out = v;
    return SC_OK;
}

static sc_code set_string(char **field, const char *value)
{
    char *copy = strdup(value);
    if (copy == NULL)
        return SC_ENOMEM;
    free(*field);
    *field = copy;
    return SC_OK;
}

/* HOST:PORT (HOST may be a bracketed IPv6 address) into *host_out and *port_out. */
static sc_code set_listen(char **host_out, unsigned *port_out, const char *value)
{
    const char *colon = strrchr(value, ':');
    if (colon == NULL || colon == value)
        return SC_EINVAL;
    uint64_t port;
    if (parse_uint(colon + 1, &port) != SC_OK || port == 0 || port > 65535)
        return SC_EINVAL;
    const char *host = value;
    size_t host_len = (size_t)(colon - value);
    if (host[0] == '[' && host_len >= 2 && host[host_len - 1] == ']') {
        host++;
        host_len -= 2;
    }
    char *copy = strndup(host, host_len);
    if (copy == NULL)
        return SC_ENOMEM;
    free(*host_out);
    *host_out = copy;
    *port_out = (unsigned)port;
    return SC_OK;
}

/* Applies one option's value; value is NULL for flags. */
static sc_code apply(struct gw_config *cfg, const struct opt *o, const char *value)
{
    char *base = (char *)cfg;
    uint64_t n;
    int level;
    switch (o->type) {
    case OPT_STR:
        if (*value == '\0')
            return SC_EINVAL;
        return set_string((char **)(base + o->offset), value);
    case OPT_LISTEN:
        if (o->offset == OFF(fleet_listen_host))
            return set_listen(&cfg->fleet_listen_host, &cfg->fleet_listen_port, value);
        return set_listen(&cfg->listen_host, &cfg->listen_port, value);
    case OPT_SIZE:
    case OPT_UINT:
    case OPT_DURATION:
        if ((o->type == OPT_SIZE       ? gw_config_parse_size(value, &n)
             : o->type == OPT_DURATION ? gw_config_parse_duration(value, &n)
                                       : parse_uint(value, &n)) != SC_OK)
            return SC_EINVAL;
        if (n < o->min || n > o->max)
            return SC_EINVAL;
        if (o->offset == OFF(chunk_size))
            cfg->chunk_size = (uint32_t)n;
        else if (o->offset == OFF(block_size))
            cfg->block_size = (uint32_t)n;
        else if (o->type == OPT_SIZE || o->type == OPT_DURATION)
            *(uint64_t *)(base + o->offset) = n;
        else
            *(unsigned *)(base + o->offset) = (unsigned)n;
        return SC_OK;
    case OPT_BOOL:
        /* Every boolean option turns a default off or a risky behaviour on. */
        if (o->offset == OFF(verify_checksums))
            cfg->verify_checksums = false;
        else
            *(bool *)(base + o->offset) = true;
        return SC_OK;
    case OPT_LOGLEVEL:
        level = sc_log_parse_level(value);
        if (level < 0)
            return SC_EINVAL;
        cfg->log_level = (unsigned)level;
        return SC_OK;
    case OPT_ACTION:
        *(bool *)(base + o->offset) = true;
        return SC_OK;
    }
    return SC_EINVAL;
}

static bool env_flag_set(const char *v)
{
    return strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0;
}

static sc_code set_defaults(struct gw_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->listen_port = 8080;
    cfg->cache_size = GIB;
    cfg->max_object_size = UINT64_MAX; /* no cap: large objects are cached in blocks */
    cfg->block_size = 8 * MIB;
    cfg->fetch_parallelism = 4;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->threads = cpus > 0 && cpus <= 256 ? (unsigned)cpus : 2;
    cfg->max_connections = 1000;
    cfg->conn_timeout = 60;
    cfg->header_timeout = 20;
    cfg->min_body_rate = KIB;
    cfg->chunk_size = 256 * KIB;
    cfg->verify_checksums = true;
    cfg->scrub_rate = 8 * MIB;
    cfg->upstream_retries = 3;
    cfg->upstream_connect_timeout = 5;
    cfg->upstream_stall_timeout = 30;
    cfg->upstream_connections = 256;
    cfg->prefetch_concurrency = 32;
    cfg->prefetch_buffer = 64 * MIB;
    cfg->log_level = SC_LOG_INFO;
    cfg->shutdown_timeout = 8; /* docker stop SIGKILLs after 10 s, Kubernetes after 30 s */
    cfg->auth_cache_ttl = 60;
    cfg->auth_cache_size = 10000;
    cfg->peer_timeout_ms = 50; /* a LAN connects in well under a millisecond */
    cfg->peers_dns_interval = 5;
    if (set_string(&cfg->listen_host, "127.0.0.1") || set_string(&cfg->identity, "gateway") ||
        set_string(&cfg->fleet_copy, "none") || set_string(&cfg->cache_dir, "s3cached-cache") ||
        set_string(&cfg->policy, "s3fifo") || set_string(&cfg->log_format, "json"))
        return SC_ENOMEM;
    const char *region = getenv("AWS_REGION");
    if (region == NULL || *region == '\0')
        region = getenv("AWS_DEFAULT_REGION");
    if (region == NULL || *region == '\0')
        region = "us-east-1";
    return set_string(&cfg->region, region);
}

static sc_code apply_env(struct gw_config *cfg, char *err, size_t err_len)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const struct opt *o = &options[i];
        const char *v = o->env ? getenv(o->env) : NULL;
        if (v == NULL || *v == '\0')
            continue;
        if (o->type == OPT_BOOL && !env_flag_set(v))
            continue;
        sc_code rc = apply(cfg, o, o->type == OPT_BOOL ? NULL : v);
        if (rc != SC_OK) {
            snprintf(err, err_len, "invalid value for %s", o->env);
            return rc;
        }
    }
    return SC_OK;
}

static const struct opt *find_option(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strlen(options[i].flag) == len && strncmp(options[i].flag, name, len) == 0)
            return &options[i];
    return NULL;
}

static sc_code apply_argv(struct gw_config *cfg, int argc, char **argv, char *err, size_t err_len)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, err_len, "unexpected argument '%s'", a);
            return SC_EINVAL;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const struct opt *o = find_option(name, len);
        if (o == NULL) {
            snprintf(err, err_len, "unknown option '%.*s'", (int)len + 2, a);
            return SC_EINVAL;
        }
        const char *value = NULL;
        bool takes_value = o->arg != NULL;
        if (takes_value && eq)
            value = eq + 1;
        else if (takes_value && i + 1 < argc)
            value = argv[++i];
        if ((takes_value && value == NULL) || (!takes_value && eq)) {
            snprintf(err, err_len, "option --%s %s", o->flag,
                     takes_value ? "needs a value" : "takes no value");
            return SC_EINVAL;
        }
        sc_code rc = apply(cfg, o, value);
        if (rc != SC_OK) {
            snprintf(err, err_len, "invalid value for --%s", o->flag);
            return rc;
        }
    }
    return SC_OK;
}

/* Strips trailing slashes and checks the scheme, so URLs can be joined safely. */
static sc_code finish_upstream(struct gw_config *cfg, char *err, size_t err_len)
{
    if (cfg->upstream == NULL) {
        char url[256];
        snprintf(url, sizeof(url), "https://s3.%s.amazonaws.com", cfg->region);
        if (set_string(&cfg->upstream, url))
            return SC_ENOMEM;
    }
    size_t n = strlen(cfg->upstream);
    while (n > 0 && cfg->upstream[n - 1] == '/')
        cfg->upstream[--n] = '\0';
    if (strncmp(cfg->upstream, "http://", 7) != 0 && strncmp(cfg->upstream, "https://", 8) != 0) {
        snprintf(err, err_len, "--upstream must start with http:// or https://");
        return SC_EINVAL;
    }
    if (strchr(cfg->upstream + 8, '?') || strchr(cfg->upstream + 8, '#')) {
        snprintf(err, err_len, "--upstream must not have a query or fragment");
        return SC_EINVAL;
    }
    return SC_OK;
}

#define ADMIN_TOKEN_MIN 16
#define ADMIN_TOKEN_MAX 4096

/* Reads the admin token from its file (first line) and checks it is long enough to guess. */
static sc_code finish_admin_token(struct gw_config *cfg, char *err, size_t err_len)
{
    if (cfg->admin_token_file != NULL) {
        FILE *f = fopen(cfg->admin_token_file, "r");
        if (f == NULL) {
            snprintf(err, err_len, "cannot read --admin-token-file %s: %s", cfg->admin_token_file,
                     strerror(errno));
            return SC_EINVAL;
        }
        char line[ADMIN_TOKEN_MAX + 2];
        bool got = fgets(line, sizeof(line), f) != NULL;
        fclose(f);
        line[got ? strcspn(line, "\r\n") : 0] = '\0';
        sc_code rc = set_string(&cfg->admin_token, line);
        OPENSSL_cleanse(line, sizeof(line));
        if (rc != SC_OK)
            return rc;
    }
    if (cfg->admin_token == NULL)
        return SC_OK;
    size_t n = strlen(cfg->admin_token);
    if (n < ADMIN_TOKEN_MIN || n > ADMIN_TOKEN_MAX) {
        snprintf(err, err_len, "the admin token must be %d to %d characters", ADMIN_TOKEN_MIN,
                 ADMIN_TOKEN_MAX);
        return SC_EINVAL;
    }
    return SC_OK;
}

/* Checks that the client-authentication options fit together. */
static sc_code finish_auth(struct gw_config *cfg, char *err, size_t err_len)
{
    if (strcmp(cfg->identity, "gateway") != 0 && strcmp(cfg->identity, "client") != 0) {
        snprintf(err, err_len, "--identity must be gateway or client");
        return SC_EINVAL;
    }
    cfg->identity_client = strcmp(cfg->identity, "client") == 0;
    if (cfg->identity_client && cfg->client_credentials == NULL) {
        snprintf(err, err_len,
                 "--identity client needs --client-credentials: the gateway signs each client's "
                 "upstream requests with that client's key pair");
        return SC_EINVAL;
    }
    if (cfg->allow_anonymous && cfg->client_credentials == NULL) {
        snprintf(err, err_len,
                 "--allow-anonymous needs --client-credentials (without it no request is "
                 "verified at all)");
        return SC_EINVAL;
    }
    return SC_OK;
}

bool gw_config_has_fleet(const struct gw_config *cfg)
{
    return cfg->peers != NULL || cfg->peers_dns != NULL;
}

#define FLEET_SECRET_FILE_MAX  4096
#define FLEET_SECRET_BYTES_MIN 16 /* fleet.h's FLEET_SECRET_MIN; checked here to say so early */

/* Reads the fleet secret: the first line of its file, checked like the client keys' file. */
static sc_code read_fleet_secret(struct gw_config *cfg, char *err, size_t err_len)
{
    char *text = NULL;
    size_t len = 0;
    char why[200] = "";
    sc_code rc = sc_secret_file_read(cfg->fleet_secret_file, FLEET_SECRET_FILE_MAX, &text, &len,
                                     why, sizeof(why));
    if (rc != SC_OK) {
        snprintf(err, err_len, "--fleet-secret-file: %s", why);
        return rc == SC_ENOMEM ? rc : SC_EINVAL;
    }
    size_t line = 0;
    while (line < len && text[line] != '\r' && text[line] != '\n')
        line++;
    bool has_nul = memchr(text, '\0', line) != NULL;
    text[line] = '\0';
    if (line < FLEET_SECRET_BYTES_MIN || has_nul) {
        OPENSSL_cleanse(text, len + 1);
        free(text);
        snprintf(err, err_len,
                 "the fleet secret (first line of --fleet-secret-file) must be at "
                 "least %d bytes, none of them NUL",
                 FLEET_SECRET_BYTES_MIN);
        return SC_EINVAL;
    }
    cfg->fleet_secret = text;
    cfg->fleet_secret_len = line;
    return SC_OK;
}

/* Checks that the fleet's options fit together, and reads its secret. */
static sc_code finish_fleet(struct gw_config *cfg, char *err, size_t err_len)
{
    enum fleet_copy copy;
    if (fleet_copy_parse(cfg->fleet_copy, &copy) != SC_OK) {
        snprintf(err, err_len, "--fleet-copy must be none, hot or all");
        return SC_EINVAL;
    }
    if (cfg->peers != NULL && cfg->peers_dns != NULL) {
        snprintf(err, err_len, "give --peers or --peers-dns, not both");
        return SC_EINVAL;
    }
    if (!gw_config_has_fleet(cfg)) {
        const char *orphan = cfg->self                ? "--self"
                             : cfg->fleet_secret_file ? "--fleet-secret-file"
                             : cfg->fleet_listen_host ? "--fleet-listen"
                                                      : NULL;
        if (orphan == NULL)
            return SC_OK;
        snprintf(err, err_len, "%s needs --peers or --peers-dns", orphan);
        return SC_EINVAL;
    }
    if (cfg->fleet_secret_file == NULL) {
        snprintf(err, err_len,
                 "a fleet (--peers, --peers-dns) needs --fleet-secret-file: peer requests are "
                 "signed with it");
        return SC_EINVAL;
    }
    if (cfg->fleet_listen_host != NULL && cfg->fleet_listen_port == cfg->listen_port &&
        strcmp(cfg->fleet_listen_host, cfg->listen_host) == 0) {
        snprintf(err, err_len, "--fleet-listen must differ from --listen");
        return SC_EINVAL;
    }
    return read_fleet_secret(cfg, err, err_len);
}

sc_code gw_config_parse(struct gw_config *cfg, int argc, char **argv, char *err, size_t err_len)
{
    sc_code rc = set_defaults(cfg);
    if (rc == SC_OK)
        rc = apply_env(cfg, err, err_len);
    if (rc == SC_OK)
        rc = apply_argv(cfg, argc, argv, err, err_len);
    if (rc == SC_OK && !cfg->show_help && !cfg->show_version)
        rc = finish_upstream(cfg, err, err_len);
    if (rc == SC_OK && !cfg->show_help && !cfg->show_version)
        rc = finish_admin_token(cfg, err, err_len);
    if (rc == SC_OK && !cfg->show_help && !cfg->show_version)
        rc = finish_auth(cfg, err, err_len);
    if (rc == SC_OK && !cfg->show_help && !cfg->show_version)
        rc = finish_fleet(cfg, err, err_len);
    if (rc == SC_OK && strcmp(cfg->log_format, "json") != 0 &&
        strcmp(cfg->log_format, "text") != 0) {
        snprintf(err, err_len, "--log-format must be json or text");
        rc = SC_EINVAL;
    }
    if (rc == SC_ENOMEM)
        snprintf(err, err_len, "out of memory");
    return rc;
}

void gw_config_free(struct gw_config *cfg)
{
    free(cfg->listen_host);
    free(cfg->upstream);
    free(cfg->region);
    free(cfg->cache_dir);
    free(cfg->policy);
    free(cfg->vhost_domain);
    if (cfg->admin_token != NULL)
        OPENSSL_cleanse(cfg->admin_token, strlen(cfg->admin_token));
    free(cfg->admin_token);
    free(cfg->admin_token_file);
    free(cfg->client_credentials);
    free(cfg->identity);
    free(cfg->log_format);
    free(cfg->log_file);
    free(cfg->peers);
    free(cfg->peers_dns);
    free(cfg->self);
    free(cfg->fleet_secret_file);
    if (cfg->fleet_secret != NULL)
        OPENSSL_cleanse(cfg->fleet_secret, cfg->fleet_secret_len);
    free(cfg->fleet_secret);
    free(cfg->fleet_listen_host);
    free(cfg->fleet_copy);
    memset(cfg, 0, sizeof(*cfg));
}

void gw_config_usage(const char *prog)
{
    printf("Usage: %s [OPTION]...\n"
           "An S3 caching gateway: serves repeated object reads from a local LMDB cache and\n"
           "passes every other request to the upstream bucket, re-signed with SigV4.\n\n",
           prog);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const struct opt *o = &options[i];
        char left[64];
        snprintf(left, sizeof(left), "--%s%s%s", o->flag, o->arg ? " " : "", o->arg ? o->arg : "");
        printf("  %-30s %s\n", left, o->help);
        if (o->env)
            printf("  %-30s   env: %s%s\n", "", o->env, o->type == OPT_BOOL ? "=1" : "");
    }
    printf("\nUpstream credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,\n"
           "or the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE). Without\n"
           "any, upstream requests are sent unsigned (public buckets).\n"
           "Client authentication (--client-credentials, --identity): see docs/security.md.\n"
           "The fleet (--peers, --peers-dns, --fleet-secret-file): see docs/fleet.md.\n"
           "Admin API under /_s3cached/ (stats, manifests, importance): see docs/manifests.md.\n");
}
