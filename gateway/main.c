/*
 * main.c - s3cached: start-up, signals and orderly shutdown.
 *
 * Start-up order: settings, the client keys it verifies, the fleet (when it has peers), the
 * gateway's credentials, store (which rebuilds the policy from what is on disk), the
 * importance scores kept from the last run (given to the policy), upstream client (which
 * asks peers through the fleet), fills, manifests, HTTP listeners (the main one and the
 * peers'). Shutdown runs it backwards, except that the upstream stops before the listeners:
 * that ends every transfer and so wakes every suspended connection, which
 * libmicrohttpd needs before it can stop.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../fleet/fleet.h"
#include "../policy/policy.h"
#include "config.h"
#include "../sigv4/creds.h"
#include "gw.h"
#include "server.h"
#include "../sigv4/client_keys.h"
#include "../store/store.h"
#include "../manifest/manifest.h"
#include "../manifest/score_keep.h"
#include "../upstream/block_fetch.h"
#include "../upstream/fill.h"
#include "authz_cache.h"

#define S3CACHED_VERSION "0.1.0"

static void handled_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

/* Waits for SIGTERM or SIGINT; SIGHUP on the way reopens the log file. */
static int wait_for_signal(void)
{
    sigset_t set;
    handled_signals(&set);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0)
            continue;
        if (sig != SIGHUP)
            return sig;
        int err = sc_log_reopen();
        if (err != 0)
            sc_err("SIGHUP: cannot reopen the log file: %s", strerror(err));
        else
            sc_info("SIGHUP: log reopened");
    }
}

static void block_signals(void)
{
    sigset_t set;
    handled_signals(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits this */
    signal(SIGPIPE, SIG_IGN);
}

/*
 * Lets the requests in flight finish: new ones are refused with 503 (and /readyz says so),
 * until none is left, the shutdown timeout passes, or a second SIGTERM or SIGINT arrives.
 */
static void drain(struct gw *g)
{
    atomic_store(&g->draining, true);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    struct timespec step = {0, 50 * 1000 * 1000};
    unsigned waited_ms = 0, limit_ms = g->cfg->shutdown_timeout * 1000u;
    while (atomic_load(&g->active_requests) > 0 && waited_ms < limit_ms) {
        if (sigtimedwait(&set, NULL, &step) > 0) {
            sc_warn("second signal: not waiting for the requests in flight");
            return;
        }
        waited_ms += 50;
    }
    unsigned left = atomic_load(&g->active_requests);
    if (left > 0)
        sc_warn("shutdown timeout: %u requests still in flight are cut off", left);
}

static sc_code open_store(struct gw *g)
{
    const struct gw_config *cfg = g->cfg;
    const struct policy_ops *policy = policy_find(cfg->policy);
    if (policy == NULL) {
        sc_err("unknown policy '%s' (known: %s)", cfg->policy, policy_names());
        return SC_EINVAL;
    }
    struct store_config sc = {
        .dir = cfg->cache_dir,
        .capacity_bytes = cfg->cache_size,
        .chunk_size = cfg->chunk_size,
        .block_size = cfg->block_size,
        .verify_checksums = cfg->verify_checksums,
        .scrub_rate = cfg->scrub_rate,
        .max_readers = cfg->max_connections + 64,
        .policy = policy,
    };
    sc_code rc = store_open(&sc, &g->st);
    if (rc != SC_OK)
        sc_err("cannot open the cache in %s: %s", cfg->cache_dir, sc_strerror(rc));
    return rc;
}

static sc_code start_upstream(struct gw *g, const struct creds *creds)
{
    const struct gw_config *cfg = g->cfg;
    struct up_config uc = {
        .base_url = cfg->upstream,
        .region = cfg->region,
        .creds = creds,
        .retries = cfg->upstream_retries,
        .insecure_tls = cfg->allow_insecure_tls,
        .connect_timeout_ms = (long)cfg->upstream_connect_timeout * 1000,
        .stall_timeout_s = (long)cfg->upstream_stall_timeout,
        .max_connections = cfg->upstream_connections,
        .fleet = g->fleet,
        .peer_connect_timeout_ms = (long)cfg->peer_timeout_ms,
    };
    sc_code rc = upstream_start(&uc, &g->up);
    if (rc != SC_OK) {
        sc_err("cannot start the upstream client for %s: %s", cfg->upstream, sc_strerror(rc));
        return rc;
    }
    enum fleet_copy copy = FLEET_COPY_NONE;
    (void)fleet_copy_parse(cfg->fleet_copy, &copy); /* checked by config.c */
    rc = origin_init(&g->origin, g->up, g->fleet, copy, cfg->block_size);
    if (rc != SC_OK)
        sc_err("cannot set up the origin of fills: %s", sc_strerror(rc));
    return rc;
}

/* The cache directory's folder for manifests and importance scores, kept across restarts. */
static void keep_dir(const struct gw *g, char *dir, size_t cap)
{
    snprintf(dir, cap, "%s/manifests", g->cfg->cache_dir);
}

/* Importance scores kept from the last run go to the policy before anything is served. */
static sc_code restore_scores(struct gw *g)
{
    char dir[4096];
    keep_dir(g, dir, sizeof(dir));
    struct score_keep_config kc = {.st = g->st, .dir = dir, .writer = true};
    sc_code rc = score_keep_open(&kc, &g->scores);
    if (rc != SC_OK)
        sc_err("cannot keep importance scores in %s: %s", dir, sc_strerror(rc));
    return rc;
}

static sc_code start_manifests(struct gw *g)
{
    char dir[4096];
    keep_dir(g, dir, sizeof(dir));
    struct mf_config mc = {
        .st = g->st,
        .up = g->up,
        .fills = g->fills,
        .capacity = g->cfg->cache_size,
        .block_size = g->cfg->block_size,
        .concurrency = g->cfg->prefetch_concurrency,
        .dir = dir,
        .stats = &g->stats,
        .fleet = g->fleet,
    };
    sc_code rc = mf_registry_start(&mc, &g->manifests);
    if (rc != SC_OK)
        sc_err("cannot start the prefetcher (manifests in %s): %s", dir, sc_strerror(rc));
    return rc;
}

static sc_code load_credentials(struct creds **creds)
{
    sc_code rc = creds_load(creds);
    if (rc == SC_ENOTFOUND) {
        sc_warn("no AWS credentials found: upstream requests are sent unsigned");
        return SC_OK;
    }
    if (rc == SC_EACCES)
        sc_err("cannot read the AWS shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else "
               "$HOME/.aws/credentials) as uid %u: make it readable to this user, point "
               "AWS_SHARED_CREDENTIALS_FILE elsewhere, or set AWS_ACCESS_KEY_ID and "
               "AWS_SECRET_ACCESS_KEY",
               (unsigned)geteuid());
    else if (rc != SC_OK)
        sc_err("cannot load AWS credentials: %s", sc_strerror(rc));
    return rc;
}

/* --client-credentials: the key pairs to verify, and the table of authorization answers. */
static sc_code load_client_keys(struct gw *g)
{
    const struct gw_config *cfg = g->cfg;
    char err[256] = "";
    if (cfg->client_credentials == NULL)
        return SC_OK;
    sc_code rc = ckeys_load(cfg->client_credentials, &g->keys, err, sizeof(err));
    if (rc != SC_OK) {
        sc_err("--client-credentials: %s", err);
        return rc;
    }
    if (cfg->identity_client || cfg->allow_anonymous) {
        rc = authz_cache_new(cfg->auth_cache_size, cfg->auth_cache_ttl, &g->authz);
        if (rc != SC_OK)
            return rc;
    }
    sc_info("client authentication: %zu key pairs from %s, identity %s, anonymous requests %s",
            ckeys_count(g->keys), cfg->client_credentials, cfg->identity,
            cfg->allow_anonymous ? "admitted" : "refused");
    return SC_OK;
}

/* --peers or --peers-dns: this gateway is one of a fleet (fleet.h). */
static sc_code start_fleet(struct gw *g)
{
    const struct gw_config *cfg = g->cfg;
    if (!gw_config_has_fleet(cfg))
        return SC_OK;
    struct fleet_config fc = {
        .peers = cfg->peers,
        .peers_dns = cfg->peers_dns,
        .self = cfg->self,
        .secret = (const unsigned char *)cfg->fleet_secret,
        .secret_len = cfg->fleet_secret_len,
        .resolve_ms = cfg->peers_dns_interval * 1000u,
    };
    sc_code rc = fleet_start(&fc, &g->fleet);
    if (rc != SC_OK) {
        sc_err("cannot start the fleet from %s %s%s%s: %s", cfg->peers ? "--peers" : "--peers-dns",
               cfg->peers ? cfg->peers : cfg->peers_dns, cfg->self ? ", --self " : "",
               cfg->self ? cfg->self : "", sc_strerror(rc));
        return rc;
    }
    struct fleet_peer_info one;
    size_t n = fleet_peers(g->fleet, &one, 1);
    sc_info("fleet: this gateway is %s, one of %zu; a peer's copies kept: %s; peer requests on %s",
            *fleet_self(g->fleet) ? fleet_self(g->fleet) : "(not in the records yet)", n,
            cfg->fleet_copy, cfg->fleet_listen_host ? "--fleet-listen" : "--listen");
    return SC_OK;
}

static int run(struct gw *g)
{
    struct creds *creds = NULL;
    struct fill_ctx fctx = {0};
    struct block_ctx bctx = {0};
    int status = 1;
    if (load_client_keys(g) != SC_OK || start_fleet(g) != SC_OK ||
        load_credentials(&creds) != SC_OK || open_store(g) != SC_OK || restore_scores(g) != SC_OK)
        goto out;
    sc_code rc = start_upstream(g, creds);
    creds_free(creds); /* the upstream keeps its own copy */
    creds = NULL;
    if (rc != SC_OK)
        goto out;
    bctx = (struct block_ctx){&g->origin, g->st, &g->stats};
    if (block_table_new(&bctx, &g->block_fetches) != SC_OK)
        goto out;
    if (verifier_start(&g->verify) != SC_OK)
        goto out;
    fctx = (struct fill_ctx){.origin = &g->origin,
                             .st = g->st,
                             .stats = &g->stats,
                             .max_object_size = g->cfg->max_object_size,
                             .window = 1024 * 1024,
                             .block_size = g->cfg->block_size,
                             .blocks = g->block_fetches,
                             .parallelism = g->cfg->fetch_parallelism,
                             .unstored_max = g->cfg->prefetch_buffer,
                             .verify = g->verify};
    if (fill_table_new(&fctx, &g->fills) != SC_OK || start_manifests(g) != SC_OK ||
        server_start(g) != SC_OK)
        goto out;
    sc_info("s3cached %s listening on %s:%u, upstream %s, cache %s (%llu bytes, policy %s)",
            S3CACHED_VERSION, g->cfg->listen_host, g->cfg->listen_port, g->cfg->upstream,
            g->cfg->cache_dir, (unsigned long long)g->cfg->cache_size, g->cfg->policy);
    int sig = wait_for_signal();
    sc_info("signal %d: draining %u requests in flight, then shutting down", sig,
            atomic_load(&g->active_requests));
    drain(g);
    status = 0;
out:
    /* No MHD_quiesce_daemon(): with an epoll thread pool it races the workers (a libmicrohttpd
     * panic). Requests accepted after upstream_stop() get a 503 and are closed by the stop. */
    mf_registry_stop(g->manifests); /* no new prefetches */
    upstream_stop(g->up);
    verifier_stop(g->verify); /* the bodies it holds get their verdicts, before the store closes */
    server_stop(g);
    score_keep_close(g->scores); /* no more posts: the last scores are written */
    store_close(g->st);          /* flushes queued writes: the last fill completions run */
    mf_registry_free(g->manifests);
    fill_table_free(g->fills);
    block_table_free(g->block_fetches);
    upstream_free(g->up);
    verifier_free(g->verify);
    origin_cleanup(&g->origin); /* after every fill and block fetch: they read its hot set */
    creds_free(creds);
    authz_cache_free(g->authz);
    ckeys_free(g->keys);  /* after the upstream: its requests borrowed the client keys */
    fleet_free(g->fleet); /* after the listeners and the upstream, which both use it */
    return status;
}

int main(int argc, char **argv)
{
    struct gw_config cfg;
    char err[256] = "";
    if (gw_config_parse(&cfg, argc, argv, err, sizeof(err)) != SC_OK) {
        fprintf(stderr, "s3cached: %s (see --help)\n", err);
        gw_config_free(&cfg);
        return 2;
    }
    if (cfg.show_help || cfg.show_version) {
        if (cfg.show_help)
            gw_config_usage(argv[0]);
        else
            printf("s3cached %s\n", S3CACHED_VERSION);
        gw_config_free(&cfg);
        return 0;
    }
    sc_log_set_level((enum sc_log_level)cfg.log_level);
    sc_log_set_json(strcmp(cfg.log_format, "json") == 0);
    int log_err = sc_log_open(cfg.log_file);
    if (log_err != 0) {
        fprintf(stderr, "s3cached: cannot open --log-file %s: %s\n", cfg.log_file,
                strerror(log_err));
        gw_config_free(&cfg);
        return 1;
    }
    block_signals();
    if (up_global_init() != SC_OK) {
        fprintf(stderr, "s3cached: cannot initialize libcurl\n");
        return 1;
    }
    struct gw g = {.cfg = &cfg};
    gw_buckets_init(&g.buckets);
    gw_readahead_init(&g.readahead);
    int status = run(&g);
    gw_readahead_destroy(&g.readahead);
    gw_buckets_destroy(&g.buckets);
    up_global_cleanup();
    gw_config_free(&cfg);
    return status;
}
