/*
 * cmd_order.c - "s3cachectl order ID --epoch E": the keys this rank reads
 * in epoch E, one per line, in the gateway's order
 * (GET /_s3cached/manifests/{id}/order?epoch=E). Keys are printed as they
 * are, for diffing against a data loader's own list.
 */
#include <stdlib.h>

#include "ctl.h"

static enum ctl_exit print_keys(struct ctl_ctx *c, const json_t *o)
{
    json_t *keys = json_object_get(o, "keys");
    if (!json_is_array(keys)) {
        fprintf(c->err, "s3cachectl: unexpected reply from %s: no \"keys\" list\n",
                c->endpoint->url);
        return CTL_EXIT_ERROR;
    }
    for (size_t i = 0; i < json_array_size(keys); i++) {
        const char *k = json_string_value(json_array_get(keys, i));
        if (k == NULL) {
            fprintf(c->err, "s3cachectl: unexpected reply: keys[%zu] is not a string\n", i);
            return CTL_EXIT_ERROR;
        }
        fputs(k, c->out);
        fputc('\n', c->out);
    }
    return CTL_EXIT_OK;
}

enum ctl_exit ctl_cmd_order(struct ctl_ctx *c)
{
    char suffix[48];
    char *path = NULL;
    json_t *o = NULL;
    enum ctl_exit ex;
    uint64_t epoch = c->args->epoch == CTL_UNSET ? 0 : c->args->epoch;
    snprintf(suffix, sizeof(suffix), "/order?epoch=%llu", (unsigned long long)epoch);
    sc_code rc = ctl_manifest_path(c->args->id, suffix, &path);
    if (rc == SC_OK)
        rc = ctl_api(c, "GET", path, NULL, 0, &o);
    if (rc != SC_OK)
        ex = ctl_api_exit(rc);
    else if (c->args->json)
        ex = ctl_print_json(c, o) == SC_OK ? CTL_EXIT_OK : CTL_EXIT_ERROR;
    else
        ex = print_keys(c, o);
    json_decref(o);
    free(path);
    return ex;
}
