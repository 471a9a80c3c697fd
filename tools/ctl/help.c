/*
 * help.c - the --help texts of s3cachectl and of each subcommand: usage,
 * what it does, its options (from cli.c's table) and examples.
 */
#include "ctl.h"

struct cmd_help {
    const char *usage;
    const char *summary; /* one line, for the tool's --help */
    const char *text;    /* what it does, and examples */
};

static const struct cmd_help helps[] = {
    [CTL_CMD_WARM] =
        {"warm FILE|- [OPTIONS]\n"
         "       s3cachectl warm --prefix s3://BUCKET/PREFIX [OPTIONS]\n"
         "       s3cachectl warm --keys-from FILE|- [--bucket NAME] [OPTIONS]",
         "register a manifest and wait until the cache is warm",
         "Registers a manifest with the gateway, prints its id, then follows its\n"
         "progress until it is warm: one updating line on a terminal, a plain line at\n"
         "most every 2 s otherwise. Objects that could not be fetched are listed at the\n"
         "end. The manifest is a JSON file (docs/manifests.md), or is built from a\n"
         "prefix or a list of keys; the sampling options build a plan like PyTorch's\n"
         "DistributedSampler (and override the same fields of a FILE).\n\n"
         "Examples:\n"
         "  s3cachectl warm manifest.json\n"
         "  s3cachectl warm --prefix s3://datasets/train/ --epochs 3 --shuffle --seed 42\n"
         "  s3cachectl warm --keys-from keys.txt --bucket datasets --world-size 8 --rank 3\n"
         "  id=$(s3cachectl warm manifest.json --no-wait)\n"},
    [CTL_CMD_STATUS] = {"status [--json]", "the gateway's counters: cache use, hits, misses",
                        "Prints the gateway's counters (GET /_s3cached/stats) as a table.\n\n"
                        "Examples:\n"
                        "  s3cachectl status\n"
                        "  s3cachectl status --json | jq .hits\n"},
    [CTL_CMD_MANIFESTS] = {"manifests [--json]", "list the manifests and their progress",
                           "Lists every manifest the gateway holds, oldest first.\n\n"
                           "Examples:\n"
                           "  s3cachectl manifests\n"
                           "  s3cachectl manifests --json\n"},
    [CTL_CMD_SHOW] = {"show ID [--json] [--wait]", "one manifest's progress and failures",
                      "Prints one manifest's progress, plan and failed objects; with --wait,\n"
                      "follows it like warm does (same exit status).\n\n"
                      "Examples:\n"
                      "  s3cachectl show m3\n"
                      "  s3cachectl show m3 --wait --wait-timeout 600\n"},
    [CTL_CMD_CANCEL] = {"cancel ID [--json]", "stop prefetching for a manifest and forget it",
                        "Cancels a manifest: prefetching stops and the plan is forgotten;\n"
                        "objects already cached stay cached.\n\n"
                        "Example:\n"
                        "  s3cachectl cancel m3\n"},
    [CTL_CMD_ORDER] = {"order ID [--epoch E] [--json]",
                       "the keys of an epoch, in the gateway's order",
                       "Prints the keys this rank reads in epoch E, one per line, in the order\n"
                       "the gateway expects, to check it against your data loader.\n\n"
                       "Examples:\n"
                       "  s3cachectl order m3 --epoch 1 | head\n"
                       "  diff <(s3cachectl order m3) loader-order.txt\n"},
    [CTL_CMD_IMPORTANCE] = {"importance FILE|- [--json]",
                            "send per-sample losses (for --policy importance)",
                            "Posts a minibatch's per-sample losses, or a JSON array of\n"
                            "minibatches: {\"bucket\": \"b\", \"losses\": {\"key\": 0.7, ...}}.\n\n"
                            "Example:\n"
                            "  echo '{\"bucket\":\"ds\",\"losses\":{\"a.jpg\":0.7}}' | "
                            "s3cachectl importance -\n"},
};

static void tool_usage(FILE *to)
{
    fprintf(to, "Usage: s3cachectl [OPTIONS] COMMAND [ARGS]\n"
                "The command line for an s3cached gateway's admin API.\n\n"
                "Commands:\n");
    for (int c = CTL_CMD_NONE + 1; c < CTL_CMD_COUNT; c++)
        fprintf(to, "  %-12s %s\n", ctl_cmd_name((enum ctl_cmd)c), helps[c].summary);
    fprintf(to, "\nGlobal options (before or after the command):\n");
    ctl_print_options(to, CTL_CMD_NONE);
    fprintf(to,
            "\nThe endpoint, as for the AWS CLI: --endpoint-url, else $AWS_ENDPOINT_URL_S3,\n"
            "else $AWS_ENDPOINT_URL (both ignored when\n"
            "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true), else %s.\n"
            "The admin token: --admin-token, else $S3CACHED_ADMIN_TOKEN.\n\n"
            "Exit status: 0 success; 1 the gateway refused the request or an error; 2 bad\n"
            "usage; 3 the gateway cannot be reached; 4 the manifest failed; 5 it was\n"
            "canceled; 6 warm but some objects failed; 7 --wait-timeout passed; 130\n"
            "interrupted.\n\n"
            "'s3cachectl COMMAND --help' shows a command's options. More: docs/s3cachectl.md\n",
            CTL_DEFAULT_ENDPOINT);
}

void ctl_usage(FILE *to, enum ctl_cmd cmd)
{
    if (cmd <= CTL_CMD_NONE || cmd >= CTL_CMD_COUNT) {
        tool_usage(to);
        return;
    }
    const struct cmd_help *h = &helps[cmd];
    fprintf(to, "Usage: s3cachectl %s\n\n%s\nOptions:\n", h->usage, h->text);
    ctl_print_options(to, cmd);
    fprintf(to, "\nGlobal options: --endpoint-url URL, --admin-token TOKEN, --timeout SECONDS,\n"
                "--no-verify-ssl, --debug (see 's3cachectl --help').\n");
}
