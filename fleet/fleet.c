/*
 * fleet.c - a fleet started and freed: the configuration checked, the secret copied, the first
 * members (members.c), the DNS thread (resolve.c); this gateway's URL; the clock.
 */
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "fleet_int.h"

#define RESOLVE_MS_DEFAULT  5000
#define DOWN_MIN_MS_DEFAULT 1000
#define DOWN_MAX_MS_DEFAULT 30000

static int64_t monotonic_ms(void *arg)
{
    (void)arg;
    return sc_now_ms();
}

int64_t fleet_now_ms(const fleet *f)
{
    return f->now_ms(f->now_arg);
}

void fleet_set_clock(fleet *f, int64_t (*now_ms)(void *arg), void *arg)
{
    f->now_ms = now_ms;
    f->now_arg = arg;
}

static sc_code check_config(const struct fleet_config *cfg)
{
    if (cfg == NULL || (cfg->peers == NULL) == (cfg->peers_dns == NULL)) {
        sc_err("fleet: give exactly one of --peers and --peers-dns");
        return SC_EINVAL;
    }
    if (cfg->secret == NULL || cfg->secret_len < FLEET_SECRET_MIN) {
        sc_err("fleet: the fleet secret must have at least %d bytes", FLEET_SECRET_MIN);
        return SC_EINVAL;
    }
    return SC_OK;
}

/* The lock fleet_owner_of reads under: writers (a new view, rare) go first, so a steady
 * stream of readers cannot hold a membership change back. */
static sc_code init_lock(fleet *f)
{
    pthread_rwlockattr_t attr;
    if (pthread_rwlockattr_init(&attr) != 0)
        return SC_ENOMEM;
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int e = pthread_rwlock_init(&f->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    return e == 0 ? SC_OK : SC_ENOMEM;
}

static sc_code configure(fleet *f, const struct fleet_config *cfg)
{
    f->secret = malloc(cfg->secret_len);
    if (f->secret == NULL)
        return SC_ENOMEM;
    memcpy(f->secret, cfg->secret, cfg->secret_len);
    f->secret_len = cfg->secret_len;
    f->resolve_ms = cfg->resolve_ms ? cfg->resolve_ms : RESOLVE_MS_DEFAULT;
    f->down_min_ms = cfg->down_min_ms ? cfg->down_min_ms : DOWN_MIN_MS_DEFAULT;
    f->down_max_ms = cfg->down_max_ms ? cfg->down_max_ms : DOWN_MAX_MS_DEFAULT;
    if (f->down_max_ms < f->down_min_ms)
        f->down_max_ms = f->down_min_ms;
    f->now_ms = monotonic_ms;
    if (cfg->self != NULL) {
        struct fleet_url self;
        if (fleet_url_parse(cfg->self, strlen(cfg->self), &self) != SC_OK) {
            sc_err("fleet: --self wants http(s)://HOST:PORT");
            return SC_EINVAL;
        }
        memcpy(f->self_url, self.url, sizeof(f->self_url));
        f->self_given = true;
        atomic_store(&f->self_known, true);
    }
    return SC_OK;
}

sc_code fleet_start(const struct fleet_config *cfg, fleet **out)
{
    *out = NULL;
    sc_code rc = check_config(cfg);
    if (rc != SC_OK)
        return rc;
    fleet *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return SC_ENOMEM;
    rc = init_lock(f);
    if (rc != SC_OK) {
        free(f);
        return rc;
    }
    rc = configure(f, cfg);
    if (rc == SC_OK)
        rc = fleet_members_start(f, cfg);
    if (rc == SC_OK && f->dns)
        rc = fleet_resolver_start(f);
    if (rc != SC_OK) {
        fleet_free(f);
        return rc;
    }
    *out = f;
    return SC_OK;
}

void fleet_free(fleet *f)
{
    if (f == NULL)
        return;
    fleet_resolver_stop(f);
    pthread_rwlock_destroy(&f->lock);
    if (f->secret != NULL)
        OPENSSL_cleanse(f->secret, f->secret_len);
    free(f->secret);
    free(f->view);
    free(f);
}

const char *fleet_self(const fleet *f)
{
    return atomic_load(&f->self_known) ? f->self_url : "";
}
