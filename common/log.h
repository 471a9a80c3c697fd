/*
 * log.h - leveled logging to stderr, one line per event.
 *
 * The level is process-wide and set once at start-up. Never pass secrets
 * (keys, signatures, tokens) to these functions.
 */
#ifndef SC_LOG_H
#define SC_LOG_H

enum sc_log_level { SC_LOG_ERROR, SC_LOG_WARN, SC_LOG_INFO, SC_LOG_DEBUG };

void sc_log_set_level(enum sc_log_level level);
/* Parses "error", "warn", "info" or "debug"; returns -1 for anything else. */
int sc_log_parse_level(const char *name);
void sc_log(enum sc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define sc_err(...)   sc_log(SC_LOG_ERROR, __VA_ARGS__)
#define sc_warn(...)  sc_log(SC_LOG_WARN, __VA_ARGS__)
#define sc_info(...)  sc_log(SC_LOG_INFO, __VA_ARGS__)
#define sc_debug(...) sc_log(SC_LOG_DEBUG, __VA_ARGS__)

#endif
