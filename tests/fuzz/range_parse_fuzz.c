// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for som_reserved_parse(), the parser of ranges= and
 * add_range, compiled from kernel/range_parse.c itself.
 *
 * Each input is parsed as the module parses a list: element after element
 * until the end or the first error. Checked: no read outside the input
 * (AddressSanitizer), no undefined behaviour (UBSan), every accepted
 * element moves forward and stops at the end or just after a comma,
 * and a list that parses is consumed completely.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../kernel/range_parse.c"

/* The kernel's memparse(): simple_strtoull(ptr, &end, 0), then K/M/G/T/P/E. */
unsigned long long memparse(const char *ptr, char **retptr)
{
	unsigned long long ret = 0;
	const char *end = ptr;
	unsigned int base = 10, d;

	if (ptr[0] == '0' && tolower((unsigned char)ptr[1]) == 'x' &&
	    isxdigit((unsigned char)ptr[2])) {
		base = 16;
		end += 2;
	} else if (ptr[0] == '0') {
		base = 8;
	}
	for (;; end++) {
		if (isdigit((unsigned char)*end))
			d = *end - '0';
		else if (isxdigit((unsigned char)*end))
			d = tolower((unsigned char)*end) - 'a' + 10;
		else
			break;
		if (d >= base)
			break;
		ret = ret * base + d;
	}
	switch (*end) {
	case 'E': case 'e':
		ret <<= 10;
		/* fall through */
	case 'P': case 'p':
		ret <<= 10;
		/* fall through */
	case 'T': case 't':
		ret <<= 10;
		/* fall through */
	case 'G': case 'g':
		ret <<= 10;
		/* fall through */
	case 'M': case 'm':
		ret <<= 10;
		/* fall through */
	case 'K': case 'k':
		ret <<= 10;
		end++;
		/* fall through */
	default:
		break;
	}
	if (retptr)
		*retptr = (char *)end;
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *s = malloc(n + 1);
	const char *p, *next;
	u64 size, start;
	int err = 0;

	if (!s)
		return 0;
	memcpy(s, data, n);
	s[n] = 0;
	for (p = s; *p; p = next) {
		err = som_reserved_parse(p, &size, &start, &next);
		if (err) {
			if (err != -EINVAL)
				abort();
			break;
		}
		if (next <= p || next > s + strlen(s))
			abort();
		if (*next && next[-1] != ',')
			abort();
	}
	/* Accepted lists end at their NUL: nothing after is ignored. */
	if (!err && *p)
		abort();
	free(s);
	return 0;
}
