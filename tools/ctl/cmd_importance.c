/*
 * cmd_importance.c - "s3cachectl importance FILE|-": post a minibatch's
 * per-sample losses, or an array of minibatches, for the importance policy
 * (POST /_s3cached/importance). The gateway validates the body.
 */
#include <stdlib.h>

#include "ctl.h"

enum ctl_exit ctl_cmd_importance(struct ctl_ctx *c)
{
    char err[CTL_ERR_MAX];
    char *data = NULL;
    size_t len = 0;
    json_t *o = NULL;
    uint64_t scored = 0;
    enum ctl_exit ex = CTL_EXIT_OK;
    sc_code rc = ctl_read_input(c->args->input, CTL_IMPORTANCE_MAX, &data, &len, err, sizeof(err));
    if (rc != SC_OK) {
        fprintf(c->err, "s3cachectl: %s\n", err);
        return CTL_EXIT_ERROR;
    }
    rc = ctl_api(c, "POST", "importance", data, len, &o);
    if (rc != SC_OK)
        ex = ctl_api_exit(rc);
    else if (c->args->json)
        ex = ctl_print_json(c, o) == SC_OK ? CTL_EXIT_OK : CTL_EXIT_ERROR;
    else if (ctl_juint(o, "scored", &scored))
        fprintf(c->out, "scored %llu sample%s\n", (unsigned long long)scored,
                scored == 1 ? "" : "s");
    else
        fprintf(c->out, "posted\n");
    json_decref(o);
    free(data);
    return ex;
}
