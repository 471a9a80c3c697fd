/*
 * cmd_warm.c - "s3cachectl warm": read or build the manifest, register it
 * (POST /_s3cached/manifests), print its id, then watch it until warm.
 */
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* "m3 registered: 50 objects, 150 reads over 3 epochs" (or "listing s3://b/p"). */
static void print_registered(struct ctl_ctx *c, const json_t *reply)
{
    char id[PROG_FIELD_MAX], bucket[PROG_LINE_MAX / 4], prefix[PROG_LINE_MAX / 4];
    struct prog_snapshot s;
    uint64_t objects = 0;
    ctl_snapshot_parse(reply, &s);
    prog_sanitize(id, sizeof(id), s.id);
    if (s.state == PROG_LISTING || !ctl_juint(reply, "objects", &objects)) {
        fprintf(c->out, "%s registered: listing s3://%s/%s\n", id,
                prog_sanitize(bucket, sizeof(bucket), s.bucket),
                s.prefix ? prog_sanitize(prefix, sizeof(prefix), s.prefix) : "");
    } else {
        fprintf(c->out, "%s registered: %llu objects, %llu reads over %llu epoch%s\n", id,
                (unsigned long long)objects, (unsigned long long)s.accesses,
                (unsigned long long)s.epochs, s.epochs == 1 ? "" : "s");
    }
    fflush(c->out);
}

/* The body to post, from the FILE, --keys-from or --prefix; prints why not. */
static sc_code make_body(struct ctl_ctx *c, char **body, size_t *len)
{
    const struct ctl_args *a = c->args;
    const char *src = a->input ? a->input : a->keys_from;
    char err[CTL_ERR_MAX];
    char *data = NULL;
    size_t data_len = 0;
    sc_code rc = SC_OK;
    if (src != NULL)
        rc = ctl_read_input(src, CTL_MANIFEST_MAX, &data, &data_len, err, sizeof(err));
    if (rc == SC_OK)
        rc = ctl_manifest_body(a, data, data_len, body, len, err, sizeof(err));
    if (rc != SC_OK)
        fprintf(c->err, "s3cachectl: %s\n", err);
    free(data);
    return rc;
}

enum ctl_exit ctl_cmd_warm(struct ctl_ctx *c)
{
    const struct ctl_args *a = c->args;
    enum ctl_exit ex = CTL_EXIT_ERROR;
    char *body = NULL, *id = NULL;
    size_t len = 0;
    json_t *reply = NULL;
    if (make_body(c, &body, &len) != SC_OK)
        goto out;
    if (a->seed != CTL_UNSET && a->shuffle < 0)
        fprintf(c->err, "s3cachectl: note: --seed without --shuffle does not shuffle\n");
    sc_code rc = ctl_api(c, "POST", "manifests", body, len, &reply);
    if (rc != SC_OK) {
        ex = ctl_api_exit(rc);
        goto out;
    }
    const char *got = ctl_jstr(reply, "id");
    id = got ? strdup(got) : NULL;
    if (id == NULL) {
        fprintf(c->err, "s3cachectl: the gateway's reply names no manifest id\n");
        goto out;
    }
    if (a->no_wait) {
        char shown[PROG_FIELD_MAX];
        fprintf(c->out, "%s\n", prog_sanitize(shown, sizeof(shown), id));
        ex = CTL_EXIT_OK;
        goto out;
    }
    if (!a->quiet)
        print_registered(c, reply);
    ex = ctl_watch(c, id);
out:
    json_decref(reply);
    free(body);
    free(id);
    return ex;
}
