/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the pool tests share: sources, per-node counters, policies and
 * where a mapping's memory lies. Include after som_util.h.
 */
#ifndef SOM_POOL_UTIL_H
#define SOM_POOL_UTIL_H

#include <dirent.h>

/* SIZE@START with G suffixes, as the VM passes them. */
static inline int parse_range(const char *s, uint64_t *size, uint64_t *start)
{
	char *end;

	if (!s)
		return 0;
	*size = strtoull(s, &end, 10) << 30;
	if (*end != 'G' || end[1] != '@')
		return 0;
	*start = strtoull(end + 2, &end, 10) << 30;
	return *end == 'G' && !end[1];
}

/* A sysfs file of a source, as text without the newline ("" if none). */
static inline const char *src_attr(const char *name, const char *attr)
{
	static char buf[128];
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), SOM_SYSFS "sources/%s/%s", name, attr);
	buf[0] = '\0';
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static inline long long node_stat(int nid, const char *attr)
{
	char name[64];

	snprintf(name, sizeof(name), "nodes/node%d/%s", nid, attr);
	return som_stat(name);
}

static inline int nr_sources(void)
{
	DIR *d = opendir(SOM_SYSFS "sources");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static inline void args_init(struct som_source_args *a, uint32_t kind)
{
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->fd = -1;
	a->node = -1;
}

static inline int src_add(int dev, struct som_source_args *a)
{
	return ioctl(dev, SOM_IOC_SOURCE_ADD, a) ? -errno : 0;
}

static inline int src_remove(int dev, const char *name)
{
	struct som_source_name n;

	memset(&n, 0, sizeof(n));
	snprintf(n.name, sizeof(n.name), "%s", name);
	return ioctl(dev, SOM_IOC_SOURCE_REMOVE, &n) ? -errno : 0;
}

/*
 * Add the machine's spare 1 GiB reserved range (SOM_SPARE_RANGES) as
 * source @name with SOM_SOURCE_* @flags: 0, -ENODEV if there is no such
 * range, or the ioctl's -errno.
 */
static inline int add_spare_gib_flags(int dev, const char *name,
				      uint32_t flags)
{
	struct som_source_args a;
	uint64_t size, start;

	if (!parse_range(getenv("SOM_SPARE_RANGES"), &size, &start) ||
	    size != 1ULL << 30)
		return -ENODEV;
	args_init(&a, SOM_SOURCE_RESERVED);
	a.flags = flags;
	a.start = start;
	a.size = size;
	snprintf(a.name, sizeof(a.name), "%s", name);
	return src_add(dev, &a);
}

static inline int add_spare_gib(int dev, const char *name)
{
	return add_spare_gib_flags(dev, name, 0);
}

/*
 * Make the pool forget the poisoned pages it remembers of the spare range
 * (SOM_POISON_FORGET), which must be out of the pool: a case that
 * poisoned some and removed the range leaves it whole for the next one.
 * 0, -ENODEV if there is no such range, or the ioctl's -errno.
 */
static inline int forget_spare_poison(int dev)
{
	struct som_poison p;
	uint64_t size, start;

	if (!parse_range(getenv("SOM_SPARE_RANGES"), &size, &start))
		return -ENODEV;
	memset(&p, 0, sizeof(p));
	p.phys = start;
	p.len = size;
	p.flags = SOM_POISON_FORGET;
	return ioctl(dev, SOM_IOC_POISON, &p) ? -errno : 0;
}

/* Set a policy: @mode over the nodes of @mask, with @flags. */
static inline int set_policy(int fd, uint32_t mode, uint64_t mask, uint32_t flags)
{
	struct som_policy p;

	memset(&p, 0, sizeof(p));
	p.mode = mode;
	p.flags = flags;
	p.nodes[0] = mask;
	return ioctl(fd, SOM_IOC_POLICY, &p) ? -errno : 0;
}

/* Where the memory behind @addr lies: node, flags and entry size. */
static inline int placement(int fd, const void *addr, struct som_mapping *m)
{
	memset(m, 0, sizeof(*m));
	m->addr = (uintptr_t)addr;
	return ioctl(fd, SOM_IOC_MAPPING, m) ? -errno : 0;
}

/*
 * Leave each GiB of node 0's pool with one block in use, held by a som
 * file: a GiB mapped now cannot get a chunk of its own there. Returns the
 * file, which frees those blocks when closed; -1 if something failed.
 */
static inline int fragment_node0(int dev)
{
	long long total = node_stat(0, "total_bytes");
	int fd = som_file(dev, 0, SOM_FILE_CLOEXEC);
	off_t off;

	if (fd < 0)
		return -1;
	if (set_policy(fd, SOM_POLICY_BIND, 1, 0) || ftruncate(fd, total) ||
	    fallocate(fd, 0, 0, total))
		goto fail;
	for (off = 0; off < total; off += GiB)
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      off, 10 * MiB) ||
		    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      off + 12 * MiB, GiB - 12 * MiB))
			goto fail;
	if (node_stat(0, "free_bytes") !=
	    total - (total / (long long)GiB) * 2 * (long long)MiB)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

#endif /* SOM_POOL_UTIL_H */
