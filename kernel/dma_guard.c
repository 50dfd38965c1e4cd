// SPDX-License-Identifier: GPL-2.0
/*
 * Keep devices from reaching som memory that has moved on.
 *
 * som hands a block to its next owner once no page-table entry maps it.
 * That is only safe if nothing else kept the translation. GUP is refused
 * (the VMA is VM_IO), KVM follows MMU notifiers, ptrace copies. Two
 * in-kernel users, though, look a VM_PFNMAP VMA up with
 * follow_pfnmap_start() and give the pfn to a device with neither a pin
 * nor a notifier:
 *
 *  - VFIO's legacy type1 IOMMU backend (vaddr_get_pfns() keeps a pfn that
 *    has no struct page, or a PageReserved one: boot-reserved ranges and
 *    device DAX, two of som's sources); a device assigned to the owner
 *    could go on writing into a block after munmap(), when it is zeroed
 *    and belongs to another process;
 *  - ACRN's hypervisor service module (acrn_vm_ram_map()).
 *
 * Nothing on that path can be hooked for one VMA, so som and these modules
 * exclude each other: som.ko does not load while one of them is loaded
 * (or built in), and refuses to let one load while som.ko is there. VFIO
 * through iommufd pins with GUP, which refuses som memory, and is not
 * affected.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/namei.h>
#include <linux/notifier.h>
#include <linux/path.h>
#include <linux/string.h>

#include "som.h"

static const char * const som_dma_guarded[] = {
	"vfio_iommu_type1",
	"acrn",
};

static bool som_dma_guarded_name(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(som_dma_guarded); i++)
		if (!strcmp(name, som_dma_guarded[i]))
			return true;
	return false;
}

static bool som_dma_guard_tripped;

static int som_dma_guard_notify(struct notifier_block *nb,
				unsigned long action, void *data)
{
	struct module *mod = data;

	if (!som_dma_guarded_name(mod->name))
		return NOTIFY_DONE;
	if (action == MODULE_STATE_COMING) {
		pr_err("%s refused while som is loaded: it maps PFN-mapped memory for devices without pinning it (see Documentation/admin-guide.md)\n",
		       mod->name);
		return notifier_from_errno(-EPERM);
	}
	if (action == MODULE_STATE_LIVE) {
		/* It came in while som.ko was loading: too late to refuse. */
		WRITE_ONCE(som_dma_guard_tripped, true);
		pr_crit("%s loaded alongside som: som maps no more memory; unload both\n",
			mod->name);
	}
	return NOTIFY_DONE;
}

/**
 * som_dma_guard_ok() - may som map memory?
 *
 * Return: false once a module that maps PFN-mapped memory for devices
 * went live next to som.ko.
 */
bool som_dma_guard_ok(void)
{
	return !READ_ONCE(som_dma_guard_tripped);
}

static struct notifier_block som_dma_guard_nb = {
	.notifier_call = som_dma_guard_notify,
};

/*
 * Is a module of that name loaded or built in? Both have a directory in
 * /sys/module (these two have parameters, so even built in). A module
 * cannot look the module list up itself.
 */
static bool som_dma_guard_present(const char *name)
{
	char dir[64];
	struct path path;

	snprintf(dir, sizeof(dir), "/sys/module/%s", name);
	if (kern_path(dir, LOOKUP_FOLLOW, &path))
		return false;
	path_put(&path);
	return true;
}

/**
 * som_dma_guard_init() - refuse the modules that would map som memory for
 *	devices without a pin or a notifier
 *
 * Context: Process context (module init).
 * Return: 0; -EBUSY if one of them is loaded already; or the error of
 * register_module_notifier().
 */
int som_dma_guard_init(void)
{
	unsigned int i;
	int err;

	/* First the notifier: a module loading now is then seen either way. */
	err = register_module_notifier(&som_dma_guard_nb);
	if (err)
		return err;
	for (i = 0; i < ARRAY_SIZE(som_dma_guarded); i++) {
		if (!som_dma_guard_present(som_dma_guarded[i]))
			continue;
		pr_err("not loaded: %s is, and it maps PFN-mapped memory for devices without pinning it; unload it first (see Documentation/admin-guide.md)\n",
		       som_dma_guarded[i]);
		unregister_module_notifier(&som_dma_guard_nb);
		return -EBUSY;
	}
	return 0;
}

/**
 * som_dma_guard_exit() - let those modules load again
 *
 * Context: Process context (module exit, or init failing).
 */
void som_dma_guard_exit(void)
{
	unregister_module_notifier(&som_dma_guard_nb);
}
