/*
 * cmd_manifests.c - "s3cachectl manifests": every manifest the gateway holds
 * (GET /_s3cached/manifests), one row each, oldest first.
 */
#include <stdlib.h>

#include "ctl.h"

#define COLUMNS 9

/* "s3://bucket/prefix" for a prefix manifest, "s3://bucket (keys)" otherwise. */
static void dataset_of(const struct prog_snapshot *s, char *buf, size_t cap)
{
    if (s->prefix != NULL)
        snprintf(buf, cap, "s3://%s/%s", s->bucket ? s->bucket : "?", s->prefix);
    else
        snprintf(buf, cap, "s3://%s (%s)", s->bucket ? s->bucket : "?", s->form ? s->form : "?");
}

static sc_code add_manifest(struct ctl_table *t, const json_t *o)
{
    char pct[PROG_FIELD_MAX], objs[PROG_FIELD_MAX], failed[PROG_FIELD_MAX], bytes[PROG_FIELD_MAX],
        epochs[PROG_FIELD_MAX], dataset[PROG_LINE_MAX];
    struct prog_snapshot s;
    ctl_snapshot_parse(o, &s);
    snprintf(pct, sizeof(pct), "%u%%", prog_percent(&s));
    if (s.total_known)
        snprintf(objs, sizeof(objs), "%llu/%llu", (unsigned long long)s.objects_cached,
                 (unsigned long long)s.objects_total);
    else
        snprintf(objs, sizeof(objs), "%llu/?", (unsigned long long)s.objects_cached);
    snprintf(failed, sizeof(failed), "%llu", (unsigned long long)s.objects_failed);
    snprintf(epochs, sizeof(epochs), "%llu", (unsigned long long)s.epochs);
    prog_bytes(bytes, sizeof(bytes), s.bytes_cached);
    dataset_of(&s, dataset, sizeof(dataset));
    const char *cells[COLUMNS] = {s.id,  s.state_name, pct,     objs,  failed,
                                  bytes, epochs,       dataset, s.name};
    return ctl_table_add(t, cells);
}

enum ctl_exit ctl_cmd_manifests(struct ctl_ctx *c)
{
    static const char *const header[COLUMNS] = {"ID",     "STATE",  "DONE",    "OBJECTS", "FAILED",
                                                "CACHED", "EPOCHS", "DATASET", "NAME"};
    json_t *reply = NULL;
    struct ctl_table t;
    enum ctl_exit ex = CTL_EXIT_ERROR;
    sc_code rc = ctl_api(c, "GET", "manifests", NULL, 0, &reply);
    if (rc != SC_OK)
        return ctl_api_exit(rc);
    ctl_table_init(&t, COLUMNS, "llrrrrrll");
    json_t *list = json_object_get(reply, "manifests");
    if (c->args->json) {
        ex = ctl_print_json(c, reply) == SC_OK ? CTL_EXIT_OK : CTL_EXIT_ERROR;
        goto out;
    }
    if (!json_is_array(list)) {
        fprintf(c->err, "s3cachectl: unexpected reply from %s: no \"manifests\" list\n",
                c->endpoint->url);
        goto out;
    }
    if (json_array_size(list) == 0) {
        fprintf(c->out, "no manifests\n");
        ex = CTL_EXIT_OK;
        goto out;
    }
    rc = ctl_table_add(&t, header);
    for (size_t i = 0; rc == SC_OK && i < json_array_size(list); i++)
        rc = add_manifest(&t, json_array_get(list, i));
    if (rc != SC_OK) {
        fprintf(c->err, "s3cachectl: out of memory\n");
        goto out;
    }
    ctl_table_print(&t, c->out);
    ex = CTL_EXIT_OK;
out:
    ctl_table_free(&t);
    json_decref(reply);
    return ex;
}
