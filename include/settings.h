/* settings.h - the one typed table of settings (settings.c): every INI
 * key with its type, bounds, default and help text, and the per-endpoint
 * overrides (the [delivery]/[breaker] keys an endpoint may set). */
#ifndef HOOKD_SETTINGS_H
#define HOOKD_SETTINGS_H
#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "epdef.h"

/* Every key's default into c (strings allocated). -1 out of memory. */
int settings_defaults(struct config *c);
void settings_free(struct config *c);
/* [section] key = value. 0; -1 bad value; -2 unknown key or section; err says which. */
int settings_set(struct config *c, const char *section, const char *key, const char *value, char *err,
                 size_t errlen);
/* An endpoint's override of a delivery setting ("timeout", "rate", ...). */
int settings_set_ep(struct ep_settings *s, const char *key, const char *value, char *err, size_t errlen);
/* Every override "inherit". */
void settings_unset(struct ep_settings *s);
/* Effective value of the overridable settings. */
struct ep_settings ep_settings_effective(const struct ep_settings *ep, const struct ep_settings *dflt);
/* For each override that is set: fn(key, value as text). */
void ep_settings_each(const struct ep_settings *s, void (*fn)(void *ctx, const char *key, const char *val), void *ctx);
/* Every section and key with value, help and default (check-config). */
void settings_dump(const struct config *c, FILE *out);

#endif
