/*
 * cmd_show.c - "s3cachectl show ID": one manifest's progress, plan and
 * failed objects (GET /_s3cached/manifests/{id}); with --wait, the watch
 * that warm runs.
 */
#include <stdlib.h>
#include <time.h>

#include "ctl.h"

static sc_code row(struct ctl_table *t, const char *label, const char *value)
{
    const char *cells[] = {label, value};
    return ctl_table_add(t, cells);
}

/* "3 epochs, 150 reads; shuffled with seed 42; rank 0 of 1" */
static void plan_text(const json_t *o, const struct prog_snapshot *s, char *buf, size_t cap)
{
    json_t *smp = json_object_get(o, "sampling");
    uint64_t seed = 0, rank = 0, world = 1;
    int n = snprintf(buf, cap, "%llu epoch%s, %llu reads", (unsigned long long)s->epochs,
                     s->epochs == 1 ? "" : "s", (unsigned long long)s->accesses);
    if (!json_is_object(smp) || n < 0 || (size_t)n >= cap)
        return;
    ctl_juint(smp, "seed", &seed);
    ctl_juint(smp, "rank", &rank);
    ctl_juint(smp, "world_size", &world);
    bool shuffled = json_is_true(json_object_get(smp, "shuffle"));
    char order[64] = "in order";
    if (shuffled)
        snprintf(order, sizeof(order), "shuffled with seed %llu", (unsigned long long)seed);
    snprintf(buf + n, cap - (size_t)n, "; %s; rank %llu of %llu%s", order, (unsigned long long)rank,
             (unsigned long long)world,
             json_is_true(json_object_get(smp, "drop_last")) ? ", drop_last" : "");
}

static void progress_text(const struct prog_snapshot *s, char *buf, size_t cap)
{
    char bar[24], cached[PROG_FIELD_MAX], total[PROG_FIELD_MAX];
    prog_bar(bar, sizeof(bar), prog_percent(s) / 100.0, 22);
    prog_bytes(cached, sizeof(cached), s->bytes_cached);
    prog_bytes(total, sizeof(total), s->bytes_total);
    if (s->total_known)
        snprintf(buf, cap, "%s %u%%  %llu/%llu objects, %s of %s known", bar, prog_percent(s),
                 (unsigned long long)s->objects_cached, (unsigned long long)s->objects_total,
                 cached, total);
    else
        snprintf(buf, cap, "%llu objects so far, %s", (unsigned long long)s->objects_cached,
                 cached);
}

static void created_text(const json_t *o, char *buf, size_t cap)
{
    uint64_t at = 0;
    struct tm tm;
    time_t t;
    buf[0] = '\0';
    if (!ctl_juint(o, "created_at", &at) || at > (uint64_t)INT32_MAX * 64)
        return;
    t = (time_t)at;
    if (gmtime_r(&t, &tm) != NULL)
        strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static sc_code details(struct ctl_table *t, const json_t *o, const struct prog_snapshot *s)
{
    char dataset[PROG_LINE_MAX], plan[PROG_LINE_MAX], prog[PROG_LINE_MAX], pos[PROG_LINE_MAX],
        n1[PROG_FIELD_MAX], n2[PROG_FIELD_MAX], n3[PROG_FIELD_MAX], r[PROG_FIELD_MAX],
        rate[PROG_LINE_MAX], eta[PROG_FIELD_MAX], created[PROG_FIELD_MAX];
    if (s->prefix)
        snprintf(dataset, sizeof(dataset), "s3://%s/%s (prefix)", s->bucket ? s->bucket : "?",
                 s->prefix);
    else
        snprintf(dataset, sizeof(dataset), "s3://%s (%s)", s->bucket ? s->bucket : "?",
                 s->form ? s->form : "?");
    plan_text(o, s, plan, sizeof(plan));
    progress_text(s, prog, sizeof(prog));
    snprintf(pos, sizeof(pos), "%llu of %llu reads", (unsigned long long)s->position,
             (unsigned long long)s->accesses);
    snprintf(rate, sizeof(rate), "%s, %.1f objects/s", prog_rate(r, sizeof(r), s->rate_bytes_per_s),
             s->rate_objects_per_s);
    created_text(o, created, sizeof(created));
    const struct {
        const char *label;
        const char *value;
        bool show;
    } rows[] = {
        {"id", s->id, true},
        {"name", s->name, true},
        {"state", s->state_name, true},
        {"error", s->error, s->error != NULL},
        {"dataset", dataset, true},
        {"plan", plan, true},
        {"trainer at", pos, true},
        {"cached", prog, true},
        {"in flight", prog_count(n1, sizeof(n1), s->objects_in_flight), true},
        {"failed", prog_count(n2, sizeof(n2), s->objects_failed), true},
        {"fit in cache", prog_count(n3, sizeof(n3), s->fits),
         s->total_known && s->fits > 0 && s->fits < s->objects_total},
        {"rate", rate, true},
        {"eta", prog_duration(eta, sizeof(eta), prog_eta(s)), !prog_state_is_final(s->state)},
        {"created", created, true},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (!rows[i].show)
            continue;
        sc_code rc = row(t, rows[i].label, rows[i].value);
        if (rc != SC_OK)
            return rc;
    }
    return SC_OK;
}

enum ctl_exit ctl_cmd_show(struct ctl_ctx *c)
{
    json_t *o = NULL;
    char *path = NULL;
    struct prog_snapshot s;
    struct ctl_table t;
    enum ctl_exit ex = CTL_EXIT_ERROR;
    if (c->args->wait)
        return ctl_watch(c, c->args->id);
    ctl_table_init(&t, 2, "ll");
    sc_code rc = ctl_manifest_path(c->args->id, "", &path);
    if (rc == SC_OK)
        rc = ctl_api(c, "GET", path, NULL, 0, &o);
    if (rc != SC_OK) {
        ex = ctl_api_exit(rc);
        goto out;
    }
    if (c->args->json) {
        ex = ctl_print_json(c, o) == SC_OK ? CTL_EXIT_OK : CTL_EXIT_ERROR;
        goto out;
    }
    ctl_snapshot_parse(o, &s);
    if (details(&t, o, &s) != SC_OK) {
        fprintf(c->err, "s3cachectl: out of memory\n");
        goto out;
    }
    ctl_table_print(&t, c->out);
    ctl_print_failures(o, s.objects_failed, c->out);
    ex = CTL_EXIT_OK;
out:
    ctl_table_free(&t);
    json_decref(o);
    free(path);
    return ex;
}
