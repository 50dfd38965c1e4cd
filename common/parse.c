// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sizes, node lists and policies as somctl(8) and somrun(1) take them.
 * One parser, so that somrun refuses exactly what its preload could not
 * use, and a size means the same to both commands.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/*
 * "4096", "2M", "16G", "0x100000000", "1T": decimal, or hex after 0x (no
 * octal: 010G is ten), with an optional K, M, G or T suffix of either
 * case. Nothing may follow, and the bytes must fit in 64 bits.
 */
int som_parse_size(const char *s, unsigned long long *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;
	int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');

	if (!isdigit((unsigned char)s[hex ? 2 : 0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, hex ? 16 : 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	case 't': case 'T':
		shift = 40;
		break;
	}
	if (shift) {
		if (v > ULLONG_MAX >> shift)
			return -EINVAL;
		v <<= shift;
		end++;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "SIZE@START", each a size as above: a physical range (somctl). */
int som_parse_range(const char *s, unsigned long long *size,
		    unsigned long long *start)
{
	const char *at = strchr(s, '@');
	char buf[64];

	if (!at || (size_t)(at - s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, at - s);
	buf[at - s] = '\0';
	if (som_parse_size(buf, size) || som_parse_size(at + 1, start))
		return -EINVAL;
	return 0;
}

/* somrun's threshold: a size of at least one byte that a mapping can have. */
int som_parse_threshold(const char *s, size_t *out)
{
	unsigned long long v;

	if (som_parse_size(s, &v) || !v || v > SIZE_MAX >> 1)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A node number: digits only, below SOM_MAX_NODES. */
static int som_parse_node(const char *s, const char **end, unsigned int *node)
{
	unsigned long v = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		v = v * 10 + (*s - '0');
		if (v >= SOM_MAX_NODES)
			return -EINVAL;
	}
	*end = s;
	*node = v;
	return 0;
}

/* "0-2,5": nodes 0, 1, 2 and 5; at least one node. */
int som_parse_nodes(const char *s, unsigned long long nodes[SOM_NODE_WORDS])
{
	unsigned long long mask[SOM_NODE_WORDS] = { 0 };
	unsigned int a, b;

	do {
		if (som_parse_node(s, &s, &a))
			return -EINVAL;
		b = a;
		if (*s == '-' && som_parse_node(s + 1, &s, &b))
			return -EINVAL;
		if (a > b)
			return -EINVAL;
		for (; a <= b; a++)
			mask[a / 64] |= 1ULL << (a % 64);
	} while (*s++ == ',');
	if (s[-1])
		return -EINVAL;
	memcpy(nodes, mask, sizeof(mask));
	return 0;
}

/*
 * "local", "preferred:N", "bind:NODES", "interleave:NODES": a
 * SOM_POLICY_* mode and its nodes (none for local, exactly one for
 * preferred).
 */
int som_parse_policy(const char *s, unsigned int *mode,
		     unsigned long long nodes[SOM_NODE_WORDS])
{
	static const struct { const char *name; unsigned int mode; } modes[] = {
		{ "local", SOM_POLICY_LOCAL },
		{ "preferred", SOM_POLICY_PREFERRED },
		{ "bind", SOM_POLICY_BIND },
		{ "interleave", SOM_POLICY_INTERLEAVE },
	};
	unsigned long long mask[SOM_NODE_WORDS] = { 0 };
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s), i;
	unsigned int count = 0;

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strlen(modes[i].name) == n && !strncmp(s, modes[i].name, n))
			break;
	if (i == sizeof(modes) / sizeof(modes[0]))
		return -EINVAL;
	if (modes[i].mode == SOM_POLICY_LOCAL) {
		if (colon)
			return -EINVAL;
	} else {
		if (!colon || som_parse_nodes(colon + 1, mask))
			return -EINVAL;
		for (n = 0; n < SOM_NODE_WORDS; n++)
			count += __builtin_popcountll(mask[n]);
		if (modes[i].mode == SOM_POLICY_PREFERRED && count != 1)
			return -EINVAL;
	}
	*mode = modes[i].mode;
	memcpy(nodes, mask, sizeof(mask));
	return 0;
}
