/*
 * test_ctl_cli.c - s3cachectl's command line (tools/ctl/cli.c): subcommands,
 * options before and after them, bounds, the checks of warm's sources, and
 * the endpoint and token resolution in the AWS CLI's order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/ctl/ctl.h"

#define MAX_ARGS 32

static char err[CTL_ERR_MAX];

/* Parses the NULL-terminated words after "s3cachectl". */
static sc_code parse_words(struct ctl_args *a, const char **words)
{
    char *argv[MAX_ARGS] = {"s3cachectl"};
    int argc = 1;
    for (; words[argc - 1] != NULL && argc < MAX_ARGS; argc++)
        argv[argc] = (char *)words[argc - 1];
    return ctl_parse_args(argc, argv, a, err, sizeof(err));
}

#define PARSE(a, ...) parse_words((a), (const char *[]){__VA_ARGS__, NULL})

/* ---- a fake environment ------------------------------------------------------ */

static const char *env_names[8];
static const char *env_values[8];

static void env_set(size_t i, const char *name, const char *value)
{
    env_names[i] = name;
    env_values[i] = value;
}

static char *fake_getenv(const char *name)
{
    for (size_t i = 0; i < 8; i++)
        if (env_names[i] && strcmp(env_names[i], name) == 0)
            return (char *)env_values[i];
    return NULL;
}

static int clear_env(void **state)
{
    memset(env_names, 0, sizeof(env_names));
    memset(env_values, 0, sizeof(env_values));
    return 0;
}

/* ---- commands and options ---------------------------------------------------- */

static void global_options_go_before_or_after_the_command(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "--endpoint-url", "http://gw:1", "status", "--debug"), SC_OK);
    assert_int_equal(a.cmd, CTL_CMD_STATUS);
    assert_string_equal(a.endpoint_url, "http://gw:1");
    assert_true(a.debug);
    assert_int_equal(PARSE(&a, "status", "--timeout=2.5", "--json"), SC_OK);
    assert_true(a.json);
    assert_true(a.timeout == 2.5);
}

static void defaults_leave_every_optional_value_unset(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "manifests"), SC_OK);
    assert_true(a.timeout == 60);
    assert_int_equal(a.epochs, CTL_UNSET);
    assert_int_equal(a.seed, CTL_UNSET);
    assert_int_equal(a.epoch, CTL_UNSET);
    assert_int_equal(a.shuffle, -1);
    assert_int_equal(a.drop_last, -1);
    assert_null(a.endpoint_url);
    assert_null(a.admin_token);
}

static void warm_takes_a_manifest_file_or_dash_for_stdin(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "warm", "m.json"), SC_OK);
    assert_string_equal(a.input, "m.json");
    assert_int_equal(PARSE(&a, "warm", "-", "--no-wait"), SC_OK);
    assert_string_equal(a.input, "-");
    assert_true(a.no_wait);
}

static void warm_builds_a_sampling_plan_from_its_options(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "warm", "--prefix", "s3://ds/train/", "--epochs", "3", "--shuffle",
                           "--seed", "42", "--world-size", "8", "--rank", "7", "--drop-last",
                           "--name", "run 7"),
                     SC_OK);
    assert_string_equal(a.prefix, "s3://ds/train/");
    assert_int_equal(a.epochs, 3);
    assert_int_equal(a.shuffle, 1);
    assert_int_equal(a.seed, 42);
    assert_int_equal(a.world_size, 8);
    assert_int_equal(a.rank, 7);
    assert_int_equal(a.drop_last, 1);
    assert_string_equal(a.name, "run 7");
}

static void the_last_of_shuffle_and_no_shuffle_wins(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "warm", "m.json", "--shuffle", "--no-shuffle"), SC_OK);
    assert_int_equal(a.shuffle, 0);
    assert_int_equal(PARSE(&a, "warm", "m.json", "--no-drop-last", "--drop-last"), SC_OK);
    assert_int_equal(a.drop_last, 1);
}

static void warm_needs_exactly_one_source(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "warm"), SC_EINVAL);
    assert_non_null(strstr(err, "needs a manifest FILE"));
    assert_int_equal(PARSE(&a, "warm", "m.json", "--prefix", "s3://b/p"), SC_EINVAL);
    assert_non_null(strstr(err, "only one of"));
    assert_int_equal(PARSE(&a, "warm", "--keys-from", "k.txt", "--prefix", "s3://b/p"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "warm", "a.json", "b.json"), SC_EINVAL);
    assert_non_null(strstr(err, "unexpected argument 'b.json'"));
}

static void prefix_is_an_s3_uri_or_a_bare_prefix_with_bucket(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "warm", "--prefix", "train/"), SC_EINVAL);
    assert_non_null(strstr(err, "s3://BUCKET/PREFIX"));
    assert_int_equal(PARSE(&a, "warm", "--prefix", "train/", "--bucket", "ds"), SC_OK);
    assert_int_equal(PARSE(&a, "warm", "--prefix", "", "--bucket", "ds"), SC_OK);
    assert_int_equal(PARSE(&a, "warm", "--prefix", "s3://", "--bucket", "ds"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "warm", "--prefix", "s3://ds/x", "--bucket", "ds"), SC_OK);
    assert_int_equal(PARSE(&a, "warm", "--prefix", "s3://ds/x", "--bucket", "other"), SC_EINVAL);
    assert_non_null(strstr(err, "differs"));
}

static void sampling_options_are_range_checked(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "warm", "m.json", "--epochs", "0"), SC_EINVAL);
    assert_string_equal(err, "--epochs must be an integer in 1..1000, not '0'");
    assert_int_equal(PARSE(&a, "warm", "m.json", "--epochs", "1001"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "warm", "m.json", "--epochs", "2x"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "warm", "m.json", "--seed", "-1"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "warm", "m.json", "--seed", "9223372036854775807"), SC_OK);
    assert_int_equal(PARSE(&a, "warm", "m.json", "--seed", "9223372036854775808"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "warm", "m.json", "--seed", "99999999999999999999"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "warm", "m.json", "--world-size", "0"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "warm", "m.json", "--world-size", "4", "--rank", "4"), SC_EINVAL);
    assert_string_equal(err, "--rank must be below --world-size (4)");
    assert_int_equal(PARSE(&a, "warm", "m.json", "--rank", "4"), SC_OK); /* the file may say */
}

static void seconds_accept_fractions_and_refuse_the_rest(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "warm", "m.json", "--wait-timeout", "0.5"), SC_OK);
    assert_true(a.wait_timeout == 0.5);
    assert_int_equal(PARSE(&a, "status", "--timeout", "-1"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "status", "--timeout", "nan"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "status", "--timeout", "1e9"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "status", "--timeout", "0"), SC_OK);
}

static void options_of_another_command_are_refused(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "status", "--epochs", "3"), SC_EINVAL);
    assert_string_equal(err, "'status' takes no --epochs option");
    assert_int_equal(PARSE(&a, "warm", "m.json", "--json"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "cancel", "m1", "--wait"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "--json"), SC_EINVAL);
    assert_non_null(strstr(err, "needs a command"));
}

static void unknown_options_missing_values_and_stray_values_are_errors(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "status", "--jsn"), SC_EINVAL);
    assert_string_equal(err, "unknown option '--jsn'");
    assert_int_equal(PARSE(&a, "status", "--endpoint-url"), SC_EINVAL);
    assert_string_equal(err, "--endpoint-url needs a value");
    assert_int_equal(PARSE(&a, "status", "--json=yes"), SC_EINVAL);
    assert_string_equal(err, "--json takes no value");
    assert_int_equal(PARSE(&a, "status", "-x"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "warm", "--keys-from", "", "--bucket", "b"), SC_EINVAL);
    assert_string_equal(err, "--keys-from needs a non-empty value");
}

static void commands_with_an_id_need_exactly_one(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "show"), SC_EINVAL);
    assert_non_null(strstr(err, "'show' needs a manifest ID"));
    assert_int_equal(PARSE(&a, "cancel", "m1", "m2"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "order", "m1", "--epoch", "2"), SC_OK);
    assert_string_equal(a.id, "m1");
    assert_int_equal(a.epoch, 2);
    assert_int_equal(PARSE(&a, "status", "extra"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "importance"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "importance", "-"), SC_OK);
    assert_string_equal(a.input, "-");
}

static void double_dash_ends_the_options(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "show", "--", "-odd-id"), SC_OK);
    assert_string_equal(a.id, "-odd-id");
}

static void help_anywhere_skips_the_other_checks(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "warm", "--help"), SC_OK);
    assert_true(a.help);
    assert_int_equal(a.cmd, CTL_CMD_WARM);
    assert_int_equal(PARSE(&a, "help", "order"), SC_OK);
    assert_true(a.help);
    assert_int_equal(a.cmd, CTL_CMD_ORDER);
    assert_int_equal(PARSE(&a, "-h"), SC_OK);
    assert_true(a.help);
    assert_int_equal(a.cmd, CTL_CMD_NONE);
    assert_int_equal(PARSE(&a, "--version"), SC_OK);
    assert_true(a.version);
}

static void unknown_command_is_named(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "stauts"), SC_EINVAL);
    assert_string_equal(err, "unknown command 'stauts'");
}

static void show_json_and_wait_do_not_combine(void **state)
{
    struct ctl_args a;
    assert_int_equal(PARSE(&a, "show", "m1", "--wait", "--json"), SC_EINVAL);
    assert_int_equal(PARSE(&a, "show", "m1", "--wait", "--quiet", "--wait-timeout", "9"), SC_OK);
}

/* ---- endpoint and token ------------------------------------------------------ */

static void endpoint_flag_wins_over_the_environment(void **state)
{
    struct ctl_endpoint ep;
    env_set(0, "AWS_ENDPOINT_URL_S3", "http://s3env:1");
    env_set(1, "AWS_ENDPOINT_URL", "http://anyenv:2");
    assert_int_equal(ctl_resolve_endpoint("http://flag:3", fake_getenv, &ep, err, sizeof(err)),
                     SC_OK);
    assert_string_equal(ep.url, "http://flag:3");
    assert_string_equal(ep.source, "--endpoint-url");
}

static void endpoint_s3_variable_wins_over_the_generic_one(void **state)
{
    struct ctl_endpoint ep;
    env_set(0, "AWS_ENDPOINT_URL_S3", "http://s3env:1");
    env_set(1, "AWS_ENDPOINT_URL", "http://anyenv:2");
    assert_int_equal(ctl_resolve_endpoint(NULL, fake_getenv, &ep, err, sizeof(err)), SC_OK);
    assert_string_equal(ep.url, "http://s3env:1");
    assert_string_equal(ep.source, "AWS_ENDPOINT_URL_S3");
    env_set(0, "AWS_ENDPOINT_URL_S3", ""); /* empty counts as unset */
    assert_int_equal(ctl_resolve_endpoint("", fake_getenv, &ep, err, sizeof(err)), SC_OK);
    assert_string_equal(ep.url, "http://anyenv:2");
    assert_string_equal(ep.source, "AWS_ENDPOINT_URL");
}

static void endpoint_defaults_to_localhost_8080(void **state)
{
    struct ctl_endpoint ep;
    assert_int_equal(ctl_resolve_endpoint(NULL, fake_getenv, &ep, err, sizeof(err)), SC_OK);
    assert_string_equal(ep.url, "http://localhost:8080");
    assert_string_equal(ep.source, "default");
}

static void ignore_configured_endpoints_skips_the_environment_not_the_flag(void **state)
{
    struct ctl_endpoint ep;
    env_set(0, "AWS_ENDPOINT_URL", "http://anyenv:2");
    env_set(1, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true");
    assert_int_equal(ctl_resolve_endpoint(NULL, fake_getenv, &ep, err, sizeof(err)), SC_OK);
    assert_string_equal(ep.url, "http://localhost:8080");
    assert_int_equal(ctl_resolve_endpoint("http://flag:3", fake_getenv, &ep, err, sizeof(err)),
                     SC_OK);
    assert_string_equal(ep.url, "http://flag:3");
}

static void endpoint_keeps_its_path_and_loses_trailing_slashes(void **state)
{
    struct ctl_endpoint ep;
    assert_int_equal(
        ctl_resolve_endpoint("https://gw.example/cache//", fake_getenv, &ep, err, sizeof(err)),
        SC_OK);
    assert_string_equal(ep.url, "https://gw.example/cache");
    assert_int_equal(ctl_resolve_endpoint("HTTP://gw:8080/", fake_getenv, &ep, err, sizeof(err)),
                     SC_OK);
    assert_string_equal(ep.url, "HTTP://gw:8080");
}

static void bad_endpoints_are_refused_naming_the_setting(void **state)
{
    struct ctl_endpoint ep;
    assert_int_equal(ctl_resolve_endpoint("localhost:8080", fake_getenv, &ep, err, sizeof(err)),
                     SC_EINVAL);
    assert_non_null(strstr(err, "from --endpoint-url"));
    assert_non_null(strstr(err, "http:// or https://"));
    env_set(0, "AWS_ENDPOINT_URL", "http://");
    assert_int_equal(ctl_resolve_endpoint(NULL, fake_getenv, &ep, err, sizeof(err)), SC_EINVAL);
    assert_non_null(strstr(err, "from AWS_ENDPOINT_URL: it has no host"));
    assert_int_equal(ctl_resolve_endpoint("http://gw/?x=1", fake_getenv, &ep, err, sizeof(err)),
                     SC_EINVAL);
    assert_int_equal(ctl_resolve_endpoint("ftp://gw", fake_getenv, &ep, err, sizeof(err)),
                     SC_EINVAL);
}

static void endpoint_with_user_info_is_refused_without_echoing_it(void **state)
{
    struct ctl_endpoint ep;
    assert_int_equal(
        ctl_resolve_endpoint("http://user:hunter2@gw:8080", fake_getenv, &ep, err, sizeof(err)),
        SC_EINVAL);
    assert_null(strstr(err, "hunter2"));
    assert_non_null(strstr(err, "user info"));
}

static void token_comes_from_the_flag_then_the_environment(void **state)
{
    const char *t = NULL;
    assert_int_equal(ctl_resolve_token(NULL, fake_getenv, &t, err, sizeof(err)), SC_OK);
    assert_null(t);
    env_set(0, "S3CACHED_ADMIN_TOKEN", "from-env");
    assert_int_equal(ctl_resolve_token(NULL, fake_getenv, &t, err, sizeof(err)), SC_OK);
    assert_string_equal(t, "from-env");
    assert_int_equal(ctl_resolve_token("from-flag", fake_getenv, &t, err, sizeof(err)), SC_OK);
    assert_string_equal(t, "from-flag");
}

static void token_with_a_line_break_is_refused_without_echoing_it(void **state)
{
    const char *t = "x";
    assert_int_equal(ctl_resolve_token("s3cr3t\r\nX-Evil: 1", fake_getenv, &t, err, sizeof(err)),
                     SC_EINVAL);
    assert_null(t);
    assert_null(strstr(err, "s3cr3t"));
    assert_non_null(strstr(err, "--admin-token"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(global_options_go_before_or_after_the_command),
        cmocka_unit_test(defaults_leave_every_optional_value_unset),
        cmocka_unit_test(warm_takes_a_manifest_file_or_dash_for_stdin),
        cmocka_unit_test(warm_builds_a_sampling_plan_from_its_options),
        cmocka_unit_test(the_last_of_shuffle_and_no_shuffle_wins),
        cmocka_unit_test(warm_needs_exactly_one_source),
        cmocka_unit_test(prefix_is_an_s3_uri_or_a_bare_prefix_with_bucket),
        cmocka_unit_test(sampling_options_are_range_checked),
        cmocka_unit_test(seconds_accept_fractions_and_refuse_the_rest),
        cmocka_unit_test(options_of_another_command_are_refused),
        cmocka_unit_test(unknown_options_missing_values_and_stray_values_are_errors),
        cmocka_unit_test(commands_with_an_id_need_exactly_one),
        cmocka_unit_test(double_dash_ends_the_options),
        cmocka_unit_test(help_anywhere_skips_the_other_checks),
        cmocka_unit_test(unknown_command_is_named),
        cmocka_unit_test(show_json_and_wait_do_not_combine),
        cmocka_unit_test_setup(endpoint_flag_wins_over_the_environment, clear_env),
        cmocka_unit_test_setup(endpoint_s3_variable_wins_over_the_generic_one, clear_env),
        cmocka_unit_test_setup(endpoint_defaults_to_localhost_8080, clear_env),
        cmocka_unit_test_setup(ignore_configured_endpoints_skips_the_environment_not_the_flag,
                               clear_env),
        cmocka_unit_test_setup(endpoint_keeps_its_path_and_loses_trailing_slashes, clear_env),
        cmocka_unit_test_setup(bad_endpoints_are_refused_naming_the_setting, clear_env),
        cmocka_unit_test_setup(endpoint_with_user_info_is_refused_without_echoing_it, clear_env),
        cmocka_unit_test_setup(token_comes_from_the_flag_then_the_environment, clear_env),
        cmocka_unit_test_setup(token_with_a_line_break_is_refused_without_echoing_it, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
