/*
 * config.h - the gateway's settings: parsed once, range-checked, then read-only.
 *
 * Every option has a command-line form and an environment twin
 * (--cache-size / S3CACHED_CACHE_SIZE); the command line wins. Parsing never
 * exits the process: it reports a message the caller prints.
 */
#ifndef GW_CONFIG_H
#define GW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"

#define GW_FETCH_PARALLELISM_MAX 64

struct gw_config {
    char *listen_host;    /* default 127.0.0.1 */
    unsigned listen_port; /* default 8080 */
    char *upstream;       /* base URL, no trailing '/' */
    char *region;
    char *cache_dir;
    uint64_t cache_size;
    char *policy;
    uint64_t max_object_size;   /* larger objects stream through uncached; UINT64_MAX: no cap */
    uint32_t block_size;        /* larger objects are cached in blocks of this size */
    unsigned fetch_parallelism; /* block fetches in flight ahead of one reader */
    char *vhost_domain;         /* NULL: path-style only */
    unsigned threads;           /* MHD worker threads */
    unsigned max_connections;
    unsigned conn_timeout;   /* seconds a connection may stay idle or stalled */
    unsigned header_timeout; /* seconds from a request's first byte to its last header; 0: off */
    uint64_t min_body_rate;  /* body bytes a second, either way (conn_guard.h); 0: off */
    uint32_t chunk_size;
    bool verify_checksums;
    bool zero_copy;          /* --zero-copy: one-value hits sent with sendfile (zerocopy.h) */
    uint64_t scrub_rate;     /* bytes a second the store's scrubber checks; 0: none */
    bool allow_insecure_tls; /* --insecure-upstream: skip TLS verification (off by default) */
    unsigned upstream_retries;
    unsigned upstream_connections;     /* per destination (the bucket, each peer) */
    unsigned prefetch_concurrency;     /* manifest prefetches in flight */
    uint64_t prefetch_buffer;          /* prefetched bodies waiting for the store, out of flight */
    unsigned upstream_connect_timeout; /* seconds */
    unsigned upstream_stall_timeout;   /* seconds without a byte before a transfer is aborted */
    unsigned log_level;
    char *log_format;          /* "json" (default) or "text" */
    char *log_file;            /* NULL: stderr */
    bool access_log;           /* one line per request */
    unsigned shutdown_timeout; /* seconds SIGTERM waits for requests in flight */
    uint64_t revalidate_after; /* seconds; 0: never revalidate a hit */
    char *admin_token;         /* NULL: none; see --admin-token; wiped by gw_config_free() */
    char *admin_token_file;    /* where admin_token was read from, if anywhere */
    /* Client authentication (docs/security.md). */
    char *client_credentials;        /* --client-credentials FILE; NULL: requests not verified */
    char *identity;                  /* "gateway" (default) or "client" */
    bool identity_client;            /* identity is "client" */
    bool allow_anonymous;            /* unsigned requests admitted (needs client_credentials) */
    bool allow_anonymous_on_network; /* ... even on a listener that is not loopback */
    uint64_t auth_cache_ttl;         /* seconds an authorization answer is remembered */
    unsigned auth_cache_size;        /* answers remembered at most */
    /* The fleet (docs/fleet.md, fleet/fleet.h): none unless peers or peers_dns is set. */
    char *peers;                 /* --peers URL,URL,...; NULL: none */
    char *peers_dns;             /* --peers-dns NAME:PORT; NULL: none */
    unsigned peers_dns_interval; /* --peers-dns-interval: seconds between resolutions */
    char *self;                  /* --self URL; NULL: detected */
    char *fleet_secret_file;     /* --fleet-secret-file; required with a fleet */
    char *fleet_secret;          /* its first line; wiped by gw_config_free(), never logged */
    size_t fleet_secret_len;     /* bytes of fleet_secret */
    char *fleet_listen_host;     /* --fleet-listen: signed peer requests only; NULL: none */
    unsigned fleet_listen_port;  /* its port (without it, peers use --listen) */
    char *fleet_copy;            /* --fleet-copy: "none" (default), "hot" or "all" */
    unsigned peer_timeout_ms;    /* --peer-timeout: connect timeout to a peer (default 50) */
    bool show_help;
    bool show_version;
};

/*
 * @brief Fills cfg from the environment, then from argv.
 * @param[out] cfg the settings, owned by the caller; release with gw_config_free().
 * @param[out] err on failure, a static or cfg-owned message naming the bad option.
 * @return SC_OK, SC_EINVAL (unknown option, bad value, out of range), SC_ENOMEM.
 */
sc_code gw_config_parse(struct gw_config *cfg, int argc, char **argv, char *err, size_t err_len);

/* @brief True when cfg names peers (--peers or --peers-dns): the gateway is in a fleet. */
bool gw_config_has_fleet(const struct gw_config *cfg);

/* @brief Frees every string cfg owns. Safe on a zeroed struct. */
void gw_config_free(struct gw_config *cfg);

/* @brief Prints --help text to stdout. */
void gw_config_usage(const char *prog);

/*
 * @brief Parses a size such as 512, 64K, 512M, 20G, 1T (powers of 1024;
 * an optional trailing 'B' or "iB" is accepted).
 * @return SC_OK or SC_EINVAL (garbage, overflow).
 */
sc_code gw_config_parse_size(const char *s, uint64_t *out);

/*
 * @brief Parses a duration: a whole number with an optional unit s, m, h or d
 * (seconds without one), e.g. 90, 30s, 10m, 1h, 7d.
 * @return SC_OK or SC_EINVAL (garbage, overflow).
 */
sc_code gw_config_parse_duration(const char *s, uint64_t *seconds);

#endif
