/*
 * main.c - s3cachectl, the command line for the gateway's admin API: parse
 * the line, resolve the endpoint and token, open the HTTP client, run one
 * subcommand and exit with its status (docs/s3cachectl.md).
 *
 * The one global is the flag SIGINT sets: a signal handler can reach
 * nothing else. Transfers and the watch loop look at it through ctl_ctx.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "ctl.h"

#define REPLY_MAX          (1ull << 30) /* an order of 10M long keys fits */
#define CONNECT_TIMEOUT_MS 10000L

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    interrupted = 1;
}

static void catch_interrupts(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: a sleep ends at once */
}

typedef enum ctl_exit (*command_fn)(struct ctl_ctx *c);

static const command_fn commands[CTL_CMD_COUNT] = {
    [CTL_CMD_WARM] = ctl_cmd_warm,
    [CTL_CMD_STATUS] = ctl_cmd_status,
    [CTL_CMD_MANIFESTS] = ctl_cmd_manifests,
    [CTL_CMD_SHOW] = ctl_cmd_show,
    [CTL_CMD_CANCEL] = ctl_cmd_cancel,
    [CTL_CMD_ORDER] = ctl_cmd_order,
    [CTL_CMD_IMPORTANCE] = ctl_cmd_importance,
};

static int usage_error(const struct ctl_args *a, const char *err)
{
    const char *cmd = ctl_cmd_name(a->cmd);
    fprintf(stderr, "s3cachectl: %s\nTry 's3cachectl %s%s--help'.\n", err, cmd, *cmd ? " " : "");
    return CTL_EXIT_USAGE;
}

/* Opens the client and runs the command. */
static int run(const struct ctl_args *a, const struct ctl_endpoint *ep, const char *token)
{
    struct ctl_http_config hc = {
        .base_url = ep->url,
        .token = token,
        .timeout_ms = (long)(a->timeout * 1000),
        .connect_timeout_ms = CONNECT_TIMEOUT_MS,
        .insecure = a->no_verify_ssl,
        .max_reply = REPLY_MAX,
        .debug = a->debug ? stderr : NULL,
        .abort_flag = &interrupted,
    };
    if (a->timeout > 0 && hc.connect_timeout_ms > hc.timeout_ms)
        hc.connect_timeout_ms = hc.timeout_ms;
    ctl_http *http = NULL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || ctl_http_open(&hc, &http) != SC_OK) {
        fprintf(stderr, "s3cachectl: cannot start libcurl\n");
        return CTL_EXIT_ERROR;
    }
    struct ctl_ctx c = {
        .args = a,
        .endpoint = ep,
        .http = http,
        .out = stdout,
        .err = stderr,
        .tty = isatty(STDOUT_FILENO) == 1,
        .interrupted = &interrupted,
    };
    catch_interrupts();
    int ex = commands[a->cmd](&c);
    ctl_http_close(http);
    curl_global_cleanup();
    if (fflush(stdout) != 0 && ex == CTL_EXIT_OK) {
        fprintf(stderr, "s3cachectl: cannot write the output\n");
        ex = CTL_EXIT_ERROR;
    }
    return ex;
}

int main(int argc, char **argv)
{
    struct ctl_args a;
    struct ctl_endpoint ep;
    const char *token = NULL;
    char err[CTL_ERR_MAX];
    if (ctl_parse_args(argc, argv, &a, err, sizeof(err)) != SC_OK)
        return usage_error(&a, err);
    if (a.help) {
        ctl_usage(stdout, a.cmd);
        return CTL_EXIT_OK;
    }
    if (a.version) {
        printf("s3cachectl %s\n", CTL_VERSION);
        return CTL_EXIT_OK;
    }
    if (a.cmd == CTL_CMD_NONE) {
        ctl_usage(stderr, CTL_CMD_NONE);
        return CTL_EXIT_USAGE;
    }
    if (ctl_resolve_endpoint(a.endpoint_url, getenv, &ep, err, sizeof(err)) != SC_OK ||
        ctl_resolve_token(a.admin_token, getenv, &token, err, sizeof(err)) != SC_OK)
        return usage_error(&a, err);
    return run(&a, &ep, token);
}
