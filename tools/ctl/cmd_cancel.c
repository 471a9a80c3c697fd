/*
 * cmd_cancel.c - "s3cachectl cancel ID": stop a manifest's prefetching and
 * forget its plan (DELETE /_s3cached/manifests/{id}); cached objects stay.
 */
#include <stdlib.h>

#include "ctl.h"

enum ctl_exit ctl_cmd_cancel(struct ctl_ctx *c)
{
    char *path = NULL;
    json_t *o = NULL;
    char line[PROG_LINE_MAX];
    struct prog_snapshot s;
    enum ctl_exit ex = CTL_EXIT_OK;
    sc_code rc = ctl_manifest_path(c->args->id, "", &path);
    if (rc == SC_OK)
        rc = ctl_api(c, "DELETE", path, NULL, 0, &o);
    if (rc != SC_OK) {
        ex = ctl_api_exit(rc);
    } else if (c->args->json) {
        ex = ctl_print_json(c, o) == SC_OK ? CTL_EXIT_OK : CTL_EXIT_ERROR;
    } else {
        ctl_snapshot_parse(o, &s);
        fprintf(c->out, "%s\n", prog_summary(line, sizeof(line), &s, -1));
    }
    json_decref(o);
    free(path);
    return ex;
}
