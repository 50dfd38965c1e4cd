// SPDX-License-Identifier: GPL-2.0
/*
 * The SIZE@START[,SIZE@START...] syntax of ranges= and add_range.
 *
 * A file of its own, needing only memparse(), so that user space can
 * compile this very code: tests/fuzz/ runs it under libFuzzer.
 */
#include <linux/errno.h>
#include <linux/string.h>

#include "source_reserved.h"

/**
 * som_reserved_parse() - parse one SIZE@START element
 * @s: text such as "2G@4G", ending at a comma, newline or NUL
 * @size: parsed size in bytes
 * @start: parsed physical start address
 * @next: where parsing stopped (after the comma, if any)
 *
 * Sizes take memparse() suffixes (K, M, G, T).
 *
 * Context: Any.
 * Return: 0, or -EINVAL if @s is not of that form.
 */
int som_reserved_parse(const char *s, u64 *size, u64 *start,
		       const char **next)
{
	char *end;

	*size = memparse(s, &end);
	if (end == s || *end != '@')
		return -EINVAL;
	s = end + 1;
	*start = memparse(s, &end);
	if (end == s)
		return -EINVAL;
	if (*end == ',' && end[1] && end[1] != '\n')
		end++;
	else if (*end == '\n' && !end[1])
		end++;
	else if (*end)
		return -EINVAL;
	*next = end;
	return 0;
}
