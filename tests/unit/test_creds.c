/*
 * test_creds.c - credential loading from a fake environment and real
 * temporary credentials files (sigv4/creds.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../sigv4/creds.h"
#include "../../sigv4/sigv4_int.h"

/* A fake environment: up to 8 NAME=value pairs. */
struct env {
    const char *vars[8][2];
};

static const char *fake_getenv(void *ctx, const char *name)
{
    const struct env *e = ctx;
    for (size_t i = 0; i < 8 && e->vars[i][0]; i++) {
        if (strcmp(e->vars[i][0], name) == 0)
            return e->vars[i][1];
    }
    return NULL;
}

/* The per-test temporary directory, and a credentials file path in it. */
struct fixture {
    char dir[64];
    char file[96];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/test_creds.XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    snprintf(f->file, sizeof(f->file), "%s/credentials", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char path[128];
    unlink(f->file);
    snprintf(path, sizeof(path), "%s/.aws/credentials", f->dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/.aws", f->dir);
    rmdir(path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(fputs(text, fp) >= 0, 1);
    assert_int_equal(fclose(fp), 0);
}

static const char two_profiles[] = "[default]\n"
                                   "aws_access_key_id = AKIDDEFAULT\n"
                                   "aws_secret_access_key = secretdefault\n"
                                   "\n"
                                   "[ci]\n"
                                   "aws_access_key_id = AKIDCI\n"
                                   "aws_secret_access_key = secretci\n"
                                   "aws_session_token = tokenci\n";

static void environment_wins_over_file(void **state)
{
    struct fixture *f = *state;
    write_file(f->file, two_profiles);
    struct env e = {{{"AWS_ACCESS_KEY_ID", "AKIDENV"},
                     {"AWS_SECRET_ACCESS_KEY", "secretenv"},
                     {"AWS_SHARED_CREDENTIALS_FILE", f->file}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_OK);
    assert_string_equal(c->access_key, "AKIDENV");
    assert_string_equal(c->secret_key, "secretenv");
    assert_null(c->session_token);
    creds_free(c);
}

static void environment_session_token_is_loaded(void **state)
{
    struct env e = {{{"AWS_ACCESS_KEY_ID", "AKIDENV"},
                     {"AWS_SECRET_ACCESS_KEY", "secretenv"},
                     {"AWS_SESSION_TOKEN", "tokenenv"}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_OK);
    assert_string_equal(c->session_token, "tokenenv");
    creds_free(c);
}

static void environment_key_without_secret_is_invalid(void **state)
{
    struct fixture *f = *state;
    write_file(f->file, two_profiles);
    struct env e = {{{"AWS_ACCESS_KEY_ID", "AKIDENV"}, {"AWS_SHARED_CREDENTIALS_FILE", f->file}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_EINVAL);
    assert_null(c); /* nothing handed out */
}

static void empty_environment_keys_fall_back_to_file(void **state)
{
    struct fixture *f = *state;
    write_file(f->file, two_profiles);
    struct env e = {{{"AWS_ACCESS_KEY_ID", ""},
                     {"AWS_SECRET_ACCESS_KEY", ""},
                     {"AWS_SHARED_CREDENTIALS_FILE", f->file}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_OK);
    assert_string_equal(c->access_key, "AKIDDEFAULT");
    creds_free(c);
}

static void file_default_profile_is_used_without_aws_profile(void **state)
{
    struct fixture *f = *state;
    write_file(f->file, two_profiles);
    struct env e = {{{"AWS_SHARED_CREDENTIALS_FILE", f->file}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_OK);
    assert_string_equal(c->access_key, "AKIDDEFAULT");
    assert_string_equal(c->secret_key, "secretdefault");
    assert_null(c->session_token);
    creds_free(c);
}

static void file_named_profile_is_used_with_its_session_token(void **state)
{
    struct fixture *f = *state;
    write_file(f->file, two_profiles);
    struct env e = {{{"AWS_SHARED_CREDENTIALS_FILE", f->file}, {"AWS_PROFILE", "ci"}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_OK);
    assert_string_equal(c->access_key, "AKIDCI");
    assert_string_equal(c->secret_key, "secretci");
    assert_string_equal(c->session_token, "tokenci");
    creds_free(c);
}

static void file_missing_profile_is_invalid(void **state)
{
    struct fixture *f = *state;
    write_file(f->file, two_profiles);
    struct env e = {{{"AWS_SHARED_CREDENTIALS_FILE", f->file}, {"AWS_PROFILE", "prod"}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_EINVAL);
    assert_null(c); /* nothing handed out */
}

static void file_profile_without_secret_is_invalid(void **state)
{
    struct fixture *f = *state;
    write_file(f->file,
               "[default]\naws_access_key_id = AKID\n[other]\naws_secret_access_key = s\n");
    struct env e = {{{"AWS_SHARED_CREDENTIALS_FILE", f->file}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_EINVAL);
}

static void file_profile_line_without_equals_is_invalid(void **state)
{
    struct fixture *f = *state;
    write_file(f->file, "[default]\naws_access_key_id = AKID\naws_secret_access_key s\n");
    struct env e = {{{"AWS_SHARED_CREDENTIALS_FILE", f->file}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_EINVAL);
}

static void comments_spaces_and_crlf_are_tolerated(void **state)
{
    struct fixture *f = *state;
    write_file(f->file, "# shared credentials\r\n"
                        "; written by hand\r\n"
                        "[other]\r\n"
                        "aws_access_key_id=AKIDOTHER\r\n"
                        "   [ default ]   # the main one\r\n"
                        "\t# a comment inside the profile\r\n"
                        "  AWS_ACCESS_KEY_ID\t=\tAKIDSPACED   \r\n"
                        "aws_secret_access_key=sec/ret+key ; inline comment\r\n"
                        "\r\n"
                        "region = us-east-1\r\n");
    struct env e = {{{"AWS_SHARED_CREDENTIALS_FILE", f->file}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_OK);
    assert_string_equal(c->access_key, "AKIDSPACED");
    assert_string_equal(c->secret_key, "sec/ret+key");
    assert_null(c->session_token);
    creds_free(c);
}

static void later_line_in_profile_overrides_earlier(void **state)
{
    struct fixture *f = *state;
    write_file(f->file, "[default]\naws_access_key_id = OLD\naws_secret_access_key = s\n"
                        "[x]\n[default]\naws_access_key_id = NEW\n");
    struct env e = {{{"AWS_SHARED_CREDENTIALS_FILE", f->file}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_OK);
    assert_string_equal(c->access_key, "NEW");
    creds_free(c);
}

static void home_default_file_is_read(void **state)
{
    struct fixture *f = *state;
    char aws[96], file[128];
    snprintf(aws, sizeof(aws), "%s/.aws", f->dir);
    snprintf(file, sizeof(file), "%s/credentials", aws);
    assert_int_equal(mkdir(aws, 0700), 0);
    write_file(file, two_profiles);
    struct env e = {{{"HOME", f->dir}, {"AWS_PROFILE", "ci"}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_OK);
    assert_string_equal(c->access_key, "AKIDCI");
    creds_free(c);
}

static void no_environment_and_no_file_is_not_found(void **state)
{
    struct fixture *f = *state;
    struct env with_home = {{{"HOME", f->dir}}};
    struct env with_file = {{{"AWS_SHARED_CREDENTIALS_FILE", f->file}}};
    struct env empty = {{{NULL, NULL}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &with_home, &c), SC_ENOTFOUND);
    assert_int_equal(creds_load_from(fake_getenv, &with_file, &c), SC_ENOTFOUND);
    assert_int_equal(creds_load_from(fake_getenv, &empty, &c), SC_ENOTFOUND);
    assert_null(c); /* nothing handed out */
}

static void directory_as_credentials_file_is_an_io_error(void **state)
{
    struct fixture *f = *state;
    struct env e = {{{"AWS_SHARED_CREDENTIALS_FILE", f->dir}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_EIO);
}

static void creds_load_reads_the_process_environment(void **state)
{
    struct creds *c = NULL;
    assert_int_equal(setenv("AWS_ACCESS_KEY_ID", "AKIDPROC", 1), 0);
    assert_int_equal(setenv("AWS_SECRET_ACCESS_KEY", "secretproc", 1), 0);
    assert_int_equal(unsetenv("AWS_SESSION_TOKEN"), 0);
    sc_code rc = creds_load(&c);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    assert_int_equal(rc, SC_OK);
    assert_string_equal(c->access_key, "AKIDPROC");
    assert_string_equal(c->secret_key, "secretproc");
    assert_null(c->session_token);
    creds_free(c);
}

static void clear_frees_and_nulls_and_accepts_zeroed_struct(void **state)
{
    struct creds c = {0};
    creds_clear(&c);
    creds_clear(NULL);
    c.access_key = strdup("AKID");
    c.secret_key = strdup("secret");
    assert_non_null(c.access_key);
    assert_non_null(c.secret_key);
    creds_clear(&c);
    assert_null(c.access_key);
    assert_null(c.secret_key);
    assert_null(c.session_token);
}

/*
 * Found by fuzz_creds: only LF ended a line, so a lone CR stayed inside a
 * value and "aws_session_token" on the same line became part of the secret.
 */
static void lone_cr_ends_a_line(void **state)
{
    struct fixture *f = *state;
    write_file(f->file, "[default]\raws_access_key_id = AKID\raws_secret_access_key = sec\r"
                        "aws_session_token = tok\r\n");
    struct env e = {{{"AWS_SHARED_CREDENTIALS_FILE", f->file}}};
    struct creds *c = NULL;
    assert_int_equal(creds_load_from(fake_getenv, &e, &c), SC_OK);
    assert_string_equal(c->access_key, "AKID");
    assert_string_equal(c->secret_key, "sec");
    assert_string_equal(c->session_token, "tok");
    creds_free(c);
}

/* A handle signs exactly as sigv4_authorization() does with the same key pair, and a copy of it
 * signs the same once the original is gone: the secret is used only inside sigv4/. */
static void handle_and_its_copy_sign_like_the_key_pair(void **state)
{
    struct creds *c = NULL, *copy = NULL;
    assert_int_equal(
        creds_new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "tok", &c), SC_OK);
    assert_string_equal(creds_access_key(c), "AKIDEXAMPLE");
    assert_string_equal(creds_session_token(c), "tok");
    struct sigv4_header h[] = {{"host", "example.amazonaws.com"},
                               {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
                               {"x-amz-date", "20150830T123600Z"}};
    struct sigv4_request req = {"GET", "/bucket/key", "", h, 3, "UNSIGNED-PAYLOAD"};
    struct sigv4_key key = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1",
                            "s3"};
    char want[512];
    assert_int_equal(sigv4_authorization(&req, &key, "20150830T123600Z", true, want, sizeof(want)),
                     SC_OK);
    char *got = NULL;
    assert_int_equal(creds_authorization(c, &req, "us-east-1", "20150830T123600Z", &got), SC_OK);
    assert_string_equal(got, want);
    free(got);
    assert_int_equal(creds_copy(c, &copy), SC_OK);
    creds_free(c);
    assert_int_equal(creds_authorization(copy, &req, "us-east-1", "20150830T123600Z", &got), SC_OK);
    assert_string_equal(got, want);
    assert_string_equal(creds_session_token(copy), "tok");
    free(got);
    creds_free(copy);
    creds_free(NULL);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(environment_wins_over_file),
        T(environment_session_token_is_loaded),
        T(environment_key_without_secret_is_invalid),
        T(empty_environment_keys_fall_back_to_file),
        T(file_default_profile_is_used_without_aws_profile),
        T(file_named_profile_is_used_with_its_session_token),
        T(file_missing_profile_is_invalid),
        T(file_profile_without_secret_is_invalid),
        T(file_profile_line_without_equals_is_invalid),
        T(comments_spaces_and_crlf_are_tolerated),
        T(later_line_in_profile_overrides_earlier),
        T(home_default_file_is_read),
        T(no_environment_and_no_file_is_not_found),
        T(directory_as_credentials_file_is_an_io_error),
        T(creds_load_reads_the_process_environment),
        T(clear_frees_and_nulls_and_accepts_zeroed_struct),
        T(lone_cr_ends_a_line),
        T(handle_and_its_copy_sign_like_the_key_pair),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
