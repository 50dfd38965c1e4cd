// SPDX-License-Identifier: GPL-2.0
/*
 * Chunk source: 1 GiB pages of the hugetlb pool, given at run time.
 *
 * The administrator's tool makes a file on hugetlbfs with 1 GiB pages (a
 * memfd with MFD_HUGETLB | MFD_HUGE_1GB is simplest: nobody else can open
 * it), allocates every page with fallocate(), possibly under a memory
 * policy to pick the node, and passes the descriptor in. som takes a
 * reference to each page, then truncates the file to 0: the pages leave
 * its page cache, so that nobody can reach them through the file any
 * more (mapping, read), and som's references are the only ones left,
 * which it checks. Nothing can migrate or free them while they are in the
 * pool; on removal som drops its references and the pages go back to the
 * hugetlb pool. som keeps the file open until then, for the pages'
 * accounting. These pages have struct pages, though with HugeTLB vmemmap
 * optimisation (hugetlb_free_vmemmap=on) only 4 KiB of them per GiB.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hugetlb.h>
#include <linux/pagemap.h>

#include "pool.h"
#include "source.h"

#ifdef CONFIG_HUGETLBFS

/**
 * struct som_hugetlb - what a hugetlb source holds
 * @file:	the hugetlbfs file, emptied
 * @folios:	the 1 GiB folios it had, one reference each
 */
struct som_hugetlb {
	struct file *file;
	struct folio *folios[];
};

static void som_hugetlb_put(struct som_hugetlb *hp, unsigned long nr)
{
	unsigned long i;

	/* The folios first: freeing them needs the file's subpool. */
	for (i = 0; i < nr; i++)
		if (hp->folios[i])
			folio_put(hp->folios[i]);
	fput(hp->file);
	kvfree(hp);
}

static void som_hugetlb_release(struct som_source *src)
{
	som_hugetlb_put(src->priv, src->nr_chunks);
}

static const struct som_source_ops som_hugetlb_ops = {
	.kind = "hugetlb",
	.release = som_hugetlb_release,
};

/**
 * som_hugetlb_add() - give the 1 GiB pages of a hugetlbfs file to the pool
 * @fd: the file's descriptor in the calling process
 * @flags: SOM_SOURCE_* flags: its chunks serve unmovable claims only,
 *	its memory is of the slow tier
 * @name: the source's name, or "" for one made up; set on success
 *
 * The file is left empty, whatever the outcome once its pages were found.
 *
 * Context: Process context, may sleep.
 * Return: 0; -EBADF; -EINVAL if @fd is not a hugetlbfs file of 1 GiB pages
 * with every page allocated; -EBUSY if it is mapped or a page has another
 * user; -EPERM if it cannot be truncated (sealed); -ENOMEM; or an error
 * from som_source_add().
 */
int som_hugetlb_add(int fd, unsigned int flags, char *name)
{
	struct som_source *src;
	struct som_hugetlb *hp;
	struct file *file;
	unsigned long nr, i;
	struct folio *folio;
	loff_t size;
	int err;

	file = fget(fd);
	if (!file)
		return -EBADF;
	err = -EINVAL;
	if (!is_file_hugepages(file) ||
	    huge_page_size(hstate_file(file)) != SOM_CHUNK_SIZE) {
		pr_err_ratelimited("hugetlb: fd %d refused: not a hugetlbfs file of 1 GiB pages\n",
				   fd);
		goto err_fput;
	}
	size = i_size_read(file_inode(file));
	nr = size >> SOM_CHUNK_SHIFT;
	if (!nr || nr > hstate_file(file)->nr_huge_pages) {
		pr_err_ratelimited("hugetlb: fd %d refused: the file has %lu pages, the hugetlb pool %lu\n",
				   fd, nr, hstate_file(file)->nr_huge_pages);
		goto err_fput;
	}
	if (mapping_mapped(file->f_mapping)) {
		pr_err_ratelimited("hugetlb: fd %d refused: the file is mapped\n",
				   fd);
		err = -EBUSY;
		goto err_fput;
	}
	err = -ENOMEM;
	hp = kvzalloc(struct_size(hp, folios, nr), GFP_KERNEL);
	if (!hp)
		goto err_fput;
	hp->file = file;
	src = som_source_alloc(&som_hugetlb_ops, nr, flags);
	if (!src) {
		som_hugetlb_put(hp, 0);
		return -ENOMEM;
	}
	src->priv = hp;
	src->struct_page = true;
	for (i = 0; i < nr; i++) {
		folio = filemap_get_folio(file->f_mapping,
					  i << (SOM_CHUNK_SHIFT - PAGE_SHIFT));
		if (IS_ERR(folio)) {
			pr_err_ratelimited("hugetlb: fd %d refused: page %lu of the file is not allocated (fallocate it)\n",
					   fd, i);
			som_hugetlb_put(hp, i);
			som_source_free(src);
			return -EINVAL;
		}
		hp->folios[i] = folio;
		src->chunks[i] = PFN_PHYS(folio_pfn(folio));
	}
	err = vfs_truncate(&file->f_path, 0);
	if (err) {
		pr_err_ratelimited("hugetlb: fd %d refused: cannot empty the file (%d)\n",
				   fd, err);
		goto err_put;
	}
	for (i = 0; i < nr; i++) {
		if (folio_ref_count(hp->folios[i]) != 1 ||
		    folio_maybe_dma_pinned(hp->folios[i])) {
			pr_err_ratelimited("hugetlb: fd %d refused: page %lu has other users\n",
					   fd, i);
			err = -EBUSY;
			goto err_put;
		}
	}
	return som_source_add(src, name);

err_put:
	som_hugetlb_put(hp, nr);
	som_source_free(src);
	return err;

err_fput:
	fput(file);
	return err;
}

#else /* !CONFIG_HUGETLBFS */

int som_hugetlb_add(int fd, unsigned int flags, char *name)
{
	return -ENODEV;
}

#endif /* CONFIG_HUGETLBFS */
