// SPDX-License-Identifier: GPL-2.0
/*
 * somctl tier: a source's tier (fast or slow), and the tiers' figures in
 * somctl status: each tier's memory, and what tiering moved between them
 * (/sys/kernel/mm/som/tiering/, Documentation/admin-guide.md, "Tiers").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <linux/som.h>

#include "somctl.h"

void tier_cmd(const struct cmdline *cl)
{
	const char *name = cl->args[0], *tier = cl->args[1];
	char path[PATH_MAX];

	if (!source_name_ok(name))
		usage_error("'%s': not a source name (at most %d letters, digits and .-_:@)",
			    name, SOM_SOURCE_NAME_LEN - 1);
	if (strcmp(tier, "fast") && strcmp(tier, "slow"))
		usage_error("'%s': no such tier (fast or slow)", tier);
	need_sysfs();
	snprintf(path, sizeof(path), SYSFS "/sources/%s/tier", name);
	if (!write_str(path, tier))
		die("%s: %s", path, errno == ENOENT ? "no such source" :
		    strerror(errno));
	printf("%s: %s tier\n", name, tier);
}

static unsigned long long tiering(const char *file)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), SYSFS "/tiering/%s", file);
	return read_u64(path);
}

/* The tiers' lines of somctl status; nothing for a module without them. */
void print_tiers(int json)
{
	static const char *const tiers[] = { "fast", "slow" };
	char file[32], a[32], b[32];
	unsigned long long total, free;
	int i;

	if (!read_line(SYSFS "/tiering/passes", a, sizeof(a)))
		return;
	if (json)
		printf(",\n \"tiers\": {");
	for (i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "%s_bytes", tiers[i]);
		total = tiering(file);
		snprintf(file, sizeof(file), "%s_free_bytes", tiers[i]);
		free = tiering(file);
		if (json) {
			printf("\"%s\": {\"total_bytes\": %llu, \"free_bytes\": %llu}, ",
			       tiers[i], total, free);
			continue;
		}
		gib_str(total, a, sizeof(a));
		gib_str(total - free, b, sizeof(b));
		printf("%s tier: %s, %s in use; ", tiers[i], a, b);
	}
	if (json) {
		printf("\"enabled\": %s, \"demoted_bytes\": %llu, \"promoted_bytes\": %llu, \"short_bytes\": %llu, \"passes\": %llu}",
		       tiering("enabled") ? "true" : "false",
		       tiering("demoted_bytes"), tiering("promoted_bytes"),
		       tiering("short_bytes"), tiering("passes"));
		return;
	}
	gib_str(tiering("demoted_bytes"), a, sizeof(a));
	gib_str(tiering("promoted_bytes"), b, sizeof(b));
	printf("tiering %s: %llu passes, demoted %s, promoted %s\n",
	       tiering("enabled") ? "on" : "off", tiering("passes"), a, b);
}
