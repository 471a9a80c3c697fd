/*
 * fuzz_httpdate.c - HTTP dates (proto/httpdate.h), as found in
 * If-Modified-Since, If-Unmodified-Since and an upstream's Last-Modified.
 *
 * Input: the field value. Invariants: a refusal leaves the output untouched;
 * an accepted date formats as a 29-byte IMF-fixdate (unless it lies past year
 * 9999, which only a leap second on the last day can reach) that parses back
 * to the same second; formatting is stable (format, parse, format gives the
 * same text); surrounding spaces and tabs do not change the result.
 */
#include <time.h>

#include "../../proto/httpdate.h"
#include "fuzz.h"

#define YEAR_10000 253402300800LL /* 10000-01-01T00:00:00Z */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    fz_init(&f, data, size);
    char *s = fz_rest(&f, &len);
    time_t t = (time_t)-12345, t2 = (time_t)-12345;
    char buf[HTTPDATE_LEN], buf2[HTTPDATE_LEN];

    sc_code rc = httpdate_parse(s, &t);
    FZ_CHECK(rc == SC_OK || rc == SC_EINVAL);
    if (rc != SC_OK) {
        FZ_CHECK(t == (time_t)-12345);
    } else if (httpdate_format(t, buf) != SC_OK) {
        FZ_CHECK((long long)t >= YEAR_10000 && buf[0] == '\0');
    } else {
        FZ_CHECK(strlen(buf) == HTTPDATE_LEN - 1);
        FZ_CHECK(httpdate_parse(buf, &t2) == SC_OK && t2 == t);
        FZ_CHECK(httpdate_format(t2, buf2) == SC_OK && strcmp(buf, buf2) == 0);
    }

    /* The same value padded with spaces and tabs parses the same. */
    char *padded = fz_dup("", len + 4);
    snprintf(padded, len + 5, " \t%s\t ", s);
    t2 = (time_t)-12345;
    sc_code rc2 = httpdate_parse(padded, &t2);
    if (strlen(s) == len) /* no NUL inside: the padded copy holds the whole value */
        FZ_CHECK(rc2 == rc && (rc != SC_OK || t2 == t));
    free(padded);
    free(s);
    return 0;
}
