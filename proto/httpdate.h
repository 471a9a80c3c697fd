/*
 * httpdate.h - HTTP dates (RFC 9110 section 5.6.7) to and from time_t.
 *
 * Parsing accepts the three forms a recipient must accept: IMF-fixdate
 * ("Sun, 06 Nov 1994 08:49:37 GMT"), the obsolete RFC 850 form
 * ("Sunday, 06-Nov-94 08:49:37 GMT") and the asctime() form
 * ("Sun Nov  6 08:49:37 1994"). Formatting always produces IMF-fixdate.
 *
 * Both directions are pure: no locale, no TZ environment, no clock. Day and
 * month names are matched case-insensitively; the day name must be a real
 * one but is not checked against the date. Surrounding spaces and tabs are
 * ignored; anything else that does not fit one of the forms is refused.
 */
#ifndef HTTPDATE_H
#define HTTPDATE_H

#include <time.h>

#include "../common/sc_err.h"

/* Buffer size for httpdate_format(): 29 characters and the NUL. */
#define HTTPDATE_LEN 30

/*
 * @brief Parses an HTTP date.
 * @param[in] s the field value, NUL-terminated; may be NULL.
 * @param[out] out seconds since the epoch (UTC); untouched on error.
 * @return SC_OK, or SC_EINVAL when s is NULL or not a valid HTTP date:
 *         unknown names, fields out of range (day beyond the month's last
 *         day, hour > 23, minute > 59, second > 60), a four-digit year
 *         before 1900, trailing garbage.
 * @note RFC 850 two-digit years use a fixed window: 70-99 are 1970-1999 and
 *       00-69 are 2000-2069 (the parser has no clock to apply RFC 9110's
 *       "more than 50 years in the future" rule). A leap second (60) is
 *       accepted and counts as the next minute's first second.
 */
sc_code httpdate_parse(const char *s, time_t *out);

/*
 * @brief Formats t as an IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
 * @param[in] t seconds since the epoch.
 * @param[out] buf receives the NUL-terminated date.
 * @return SC_OK, or SC_EINVAL when t falls outside years 1900-9999 (buf then
 *         holds an empty string).
 */
sc_code httpdate_format(time_t t, char buf[HTTPDATE_LEN]);

#endif
