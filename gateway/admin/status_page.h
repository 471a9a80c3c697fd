/*
 * status_page.h - the status page (gateway/admin/status_page.html) as compiled into the binary.
 *
 * The Makefile runs tools/embed on status_page.html and compiles the result
 * (build/gen/status_page.c), which defines these. The page is self-contained: one inline
 * <style>, one inline <script>, nothing loaded from anywhere; the hashes let a
 * Content-Security-Policy admit exactly those two and nothing else.
 */
#ifndef GW_STATUS_PAGE_H
#define GW_STATUS_PAGE_H

#include <stddef.h>

extern const unsigned char gw_status_page_html[]; /* UTF-8, not NUL-terminated */
extern const size_t gw_status_page_html_len;
extern const char gw_status_page_script_hash[]; /* "sha256-<base64>" of the <script> content */
extern const char gw_status_page_style_hash[];  /* same, of the <style> content */

#endif
