#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The report of `vm/run bench`, from the guest's SOMBENCH lines.

    report.py --raw RAW --host HOST --command CMD --out DIR

RAW holds the lines vm/guest/bench.sh printed ("SOMBENCH <kind> k=v ..."),
HOST the host's key=value lines (vm/lib/bench.sh). Writes to DIR:

    table.txt     the table (also printed): median of N runs [min-max]
    results.json  every run and every summary figure, with the machine
    results.csv   the summary figures, one per line
    *.png         the plots

Debian's python3 and python3-matplotlib; nothing else.
"""
import argparse
import csv
import io
import json
import os
import statistics
import sys
import textwrap

BACKINGS = ["anon4k", "thp", "hugetlb", "memfd", "som", "som-cold"]
LABEL = {
    "anon4k": "anon 4 KiB",
    "thp": "anon THP",
    "hugetlb": "hugetlb 1 GiB",
    "memfd": "memfd",
    "som": "som",
    "som-cold": "som cold",
}
COLOR = {
    "anon4k": "#9e9e9e",
    "thp": "#5b8fd6",
    "hugetlb": "#e0a030",
    "memfd": "#b07cc6",
    "som": "#2e9e5b",
    "som-cold": "#9fd4a8",
}
CHURN = {
    "som-2m": "som 2 MiB (som_alloc, write, som_free)",
    "som-1g": "som 1 GiB (som_alloc, write, som_free)",
    "thp-2m": "anon THP 2 MiB (mmap, write, munmap)",
    "hugetlb-1g": "hugetlb 1 GiB (mmap, write, munmap)",
}
GIB = 1 << 30
MIB = 1 << 20


def parse(path):
    """SOMBENCH lines -> list of (kind, {key: value}); numbers as numbers."""
    recs = []
    with open(path) as f:
        for line in f:
            words = line.split()
            if len(words) < 2 or words[0] != "SOMBENCH":
                continue
            d = {}
            for w in words[2:]:
                k, sep, v = w.partition("=")
                if not sep:
                    continue
                try:
                    d[k] = int(v)
                except ValueError:
                    try:
                        d[k] = float(v)
                    except ValueError:
                        d[k] = v
            recs.append((words[1], d))
    return recs


def stat(values):
    """Median, min, max and count of a list of numbers (None if empty)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
        "values": values,
    }


def touch_metrics(runs, som_runs):
    """Per-run figures of one backing at one size, and their summary."""
    per = {}
    for r in runs:
        gib = r["gib"]
        som = som_runs.get(r["run"])
        # -1: not known in this run (hugetlb pages allocated in another)
        sp = r["struct_page_bytes"]
        som_backing = r["backing"].startswith("som")
        # som: sysfs, the pool's share plus the mapping's region and its
        # table; the others: the xarray nodes slabinfo saw (memfd)
        meta = sp + r["pool_meta_bytes"] + (
            r["region_meta_bytes"] if som_backing else r["xa_bytes"])
        m = {
            "faults_per_gib": r["faults"] / gib,
            "first_touch_s": r["touch_ns"] / 1e9,
            "page_table_bytes_per_gib": r["pt_bytes"] / gib,
            "metadata_bytes_per_gib": meta / gib if sp >= 0 else None,
            "struct_page_bytes_per_gib": sp / gib if sp >= 0 else None,
            "xarray_bytes_per_gib": r["xa_bytes"] / gib,
            "pool_metadata_bytes_per_gib": r["pool_meta_bytes"] / gib,
            "free_ms": r["free_ns"] / 1e6,
            "rezero_ms": (r["rezero_ns"] / 1e6 if r["backing"] == "som" and
                          r["rezero_ns"] >= 0 else None),
            "gups_mupdates_per_s": r["gups_ops"] / r["gups_ns"] * 1e3,
            "entry_bytes": r["entry"],
        }
        if som_backing:
            m["region_metadata_bytes_per_gib"] = r["region_meta_bytes"] / gib
            m["fault_zeroed_mib_per_gib"] = r["zf_bytes"] / MIB / gib
        if som:
            m["first_touch_vs_som"] = r["touch_ns"] / som["touch_ns"]
            m["gups_vs_som"] = (r["gups_ops"] / r["gups_ns"]) / (
                som["gups_ops"] / som["gups_ns"])
        for k, v in m.items():
            per.setdefault(k, []).append(v)
    return {k: stat(v) for k, v in per.items()}


def fmt_num(v, digits):
    if v is None:
        return "-"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def cell(s, digits=0):
    """'median [min-max]', or 'median =' when every run gave that value."""
    if s is None:
        return "-"
    med = fmt_num(s["median"], digits)
    if s["min"] == s["max"]:
        return med + " ="
    return f"{med} [{fmt_num(s['min'], digits)}-{fmt_num(s['max'], digits)}]"


def entry_name(s):
    if s is None:
        return "-"
    names = {GIB: "1 GiB", 2 << 20: "2 MiB", 4096: "4 KiB"}
    if s["min"] != s["max"]:
        return "varies"
    return names.get(s["median"], "mixed")


def rate_cell(s):
    """A rate: one decimal under 10 per second."""
    return cell(s, 1 if s and s["median"] < 10 else 0)


def churn_runs(churn):
    """Every som allocate/free run's raw line."""
    return [d for c in churn.values() if c["som"] for d in c["runs"]]


def ratio_cell(s):
    if s is None:
        return "-"
    if s["min"] == s["max"]:
        return f"{s['median']:.2f}x ="
    return f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]"


ROWS = [
    ("page faults per GiB", "faults_per_gib", lambda s: cell(s)),
    ("mapped with entries of", "entry_bytes", entry_name),
    ("first touch, s", "first_touch_s", lambda s: cell(s, 3)),
    ("  vs som pre-zeroed", "first_touch_vs_som", ratio_cell),
    ("zeroed in fault, MiB/GiB", "fault_zeroed_mib_per_gib",
     lambda s: cell(s)),
    ("page-table bytes per GiB", "page_table_bytes_per_gib", lambda s: cell(s)),
    ("metadata bytes per GiB", "metadata_bytes_per_gib", lambda s: cell(s)),
    ("free (munmap), ms", "free_ms", lambda s: cell(s, 1)),
    ("pool re-zeroed it, ms", "rezero_ms", lambda s: cell(s, 0)),
    ("random updates, M/s", "gups_mupdates_per_s", lambda s: cell(s, 2)),
    ("  vs som pre-zeroed", "gups_vs_som", ratio_cell),
]


def xa_check(touches):
    """som's region tables by sysfs against the xarray nodes slabinfo saw:
    (runs, [runs that disagree])."""
    som = [d for d in touches if d["backing"].startswith("som")]
    bad = [d for d in som
           if d["region_table_bytes"] != d["xa_nodes"] * d["xa_node_bytes_sysfs"]]
    return len(som), bad


def zero_rate(runs, who):
    """CPU ms per GiB of each run's zeroing by the worker or in faults."""
    return stat([r[f"z{who}_ns"] / 1e6 / (r[f"z{who}_bytes"] / GIB)
                 for r in runs if r.get(f"z{who}_bytes", 0) > 0])


def table(summary, sizes, backings, nruns, churn, memcached, info, touches):
    def counted(f):
        """A cell that also says its run count when it is not every run."""
        def g(s):
            c = f(s)
            return c if s is None or s["n"] == nruns else f"{c} n={s['n']}"
        return g

    out = io.StringIO()
    p = lambda s="": print(s, file=out)
    p(f"Each figure: median of {nruns} runs [min-max]; '=' every run gave "
      "the same value; n=N: only N runs measured it.")
    p("Times are under QEMU TCG, which does not model TLB or cache costs: "
      "indicative only.")
    cells = {(gib, key): [counted(f)(summary.get(b, {}).get(gib, {}).get(key))
                          for b in backings]
             for gib in sizes for label, key, f in ROWS}
    widths = [max(len(LABEL[b]), *(len(c[i]) for c in cells.values())) + 2
              for i, b in enumerate(backings)]
    for gib in sizes:
        p()
        p(f"{gib} GiB, one write per 4 KiB page".ljust(26) +
          "".join(LABEL[b].rjust(w) for b, w in zip(backings, widths)))
        for label, key, f in ROWS:
            p((label.ljust(26) + "".join(
                c.rjust(w) for c, w in zip(cells[(gib, key)], widths))).rstrip())
    p()
    memmap = info.get("memmap_per_gib")
    memmap = f"{memmap:,}" if isinstance(memmap, int) else "?"
    pool_meta, pool = info.get("pool_meta_bytes"), info.get("pool_bytes")
    pool_meta = (f"{pool_meta:,} bytes for {pool // GIB} GiB"
                 if isinstance(pool_meta, int) and isinstance(pool, int)
                 and pool > 0 else "?")
    objsize = info.get("radix_objsize")
    nsom, bad = xa_check(touches)
    if bad:
        check = ("cross-check FAILED: sysfs's region table and the xarray "
                 "nodes in /proc/slabinfo disagree in " + ", ".join(
                     f"{d['backing']} {d['gib']} GiB run {d['run']} "
                     f"({d['region_table_bytes']:,} bytes, "
                     f"{d['xa_nodes']} nodes)" for d in bad) + ".")
    else:
        check = (f"Cross-check: in all {nsom} som measurements the table "
                 "sysfs counts is the xarray nodes /proc/slabinfo saw the "
                 "mapping add, node for node.")
    for note in (
            "faults: minor faults of the write loop (getrusage). Page-table "
            "bytes: VmPTE before and after it.",
            "zeroed in fault: som only (the kernel's backings zero all of "
            "it in the fault): what the process zeroed itself (sysfs "
            "zero_fault_bytes) because the worker had not reached that "
            "memory yet.",
            "metadata: struct page (the memmap per GiB of RAM, measured from "
            f"/proc/vmstat: {memmap} bytes); memfd: plus the xarray nodes of "
            "its page cache (/proc/slabinfo, exact with "
            "slab_debug=F,radix_tree_node). som, all of it from sysfs: the "
            "pool's and sources' part of metadata_bytes per GiB of pool "
            f"({pool_meta}) plus region_metadata_bytes read while mapped (the "
            "mapping's region, its counters and its table: xarray nodes at "
            f"576 bytes, sizeof(struct xa_node); the slab spends {objsize} on "
            f"each, {objsize - 576 if isinstance(objsize, int) else '?'} more "
            "per node, one node per region of 2 to 64 GiB, not in the "
            "figure). Not counted "
            "for any backing: the VMA, file and inode. " + check +
            " hugetlb: the struct page HVO leaves, measured from the memmap "
            "counters as each page was allocated (once per page: they are "
            "kept, see Documentation/kernel-facts.md).",
            "re-zeroed: som only; som cold's figure would include the rest "
            "of its pool, still dirty.",
            "random updates: 8-byte read-modify-writes at random over the "
            "buffer; relative to som at the same size, run by run."):
        p(textwrap.fill(note, 100, subsequent_indent="  "))
    if churn:
        p()
        p("Allocate, write once, free".ljust(58) + "ops/s".rjust(22) +
          "ops/s, zeroing incl.".rjust(24) + "zeroed in faults, %".rjust(22) +
          "faults per op".rjust(16))
        for key, c in churn.items():
            p(c["label"].ljust(58) + rate_cell(c["ops_per_s"]).rjust(22) +
              rate_cell(c["ops_per_s_zeroing"]).rjust(24) +
              (cell(c["fault_zeroed_pct"], 0) if c["som"] else "all")
              .rjust(22) +
              cell(c["faults_per_op"], 0).rjust(16))
        for note in (
                "ops/s: wall-clock, in one process. zeroing incl.: ops over "
                "the loop's time plus the CPU time the zeroing worker spent "
                "until the pool was all zeroed again (sysfs zero_worker_ns); "
                "som's loops start from an all-zeroed pool. The kernel's "
                "backings zero in the fault: their two rates are the same "
                "figure. zeroed in faults: of the bytes the loop allocated, "
                "what its faults zeroed themselves (zero_fault_bytes) because "
                "the pre-zeroed memory had run out.",):
            p(textwrap.fill(note, 100, subsequent_indent="  "))
    som_runs = [d for d in touches if d["backing"].startswith("som")]
    if som_runs:
        p()
        p("Zeroing som memory".ljust(58) + "CPU ms per GiB".rjust(22))
        worker = zero_rate(som_runs + churn_runs(churn), "w")
        fault = zero_rate([d for d in som_runs if d["backing"] == "som-cold"],
                          "f")
        p("by the worker, ahead of time".ljust(58) + cell(worker, 0).rjust(22))
        if fault:
            p("in the faults of som cold".ljust(58) + cell(fault, 0).rjust(22))
        z = summary.get("som", {})
        rates = [x for g in z for x in (z[g].get("zeroing_gib_per_s") or
                                        {"values": []})["values"]]
        if rates:
            p("worker re-zeroing after a free, GiB/s (wall clock)".ljust(58)
              + cell(stat(rates), 2).rjust(22))
        p(textwrap.fill(
            "CPU ms per GiB: sysfs zero_*_ns over zero_*_bytes, the time "
            "the memsets took, run by run. The worker's, over every som "
            "measurement and som loop, is a kernel thread's CPU time, "
            "charged to no process and outside the cgroup CPU controller; "
            "the faults' is the faulting process's own.", 100,
            subsequent_indent="  "))
    if memcached:
        p()
        p("memcached, fixed load".ljust(58) + "ops/s".rjust(22) +
          "p99 latency, us".rjust(22))
        for alloc, label in (("glibc", "glibc malloc (THP)"),
                             ("som", "under somrun (som)")):
            if alloc in memcached:
                m = memcached[alloc]
                p(label.ljust(58) + cell(m["ops_per_s"], 0).rjust(22) +
                  cell(m["p99_us"], 0).rjust(22))
        load = memcached.get("load")
        if load:
            p(f"  load: {load}")
    return out.getvalue()


def plot_setup():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({
        "font.size": 7, "axes.titlesize": 8, "axes.labelsize": 7,
        "legend.fontsize": 6, "xtick.labelsize": 6, "ytick.labelsize": 6,
        "axes.spines.top": False, "axes.spines.right": False,
    })
    return plt


def save(plt, fig, path):
    """A small PNG: palette colours, optimised."""
    from PIL import Image
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    buf.seek(0)
    img = Image.open(buf).convert("RGB").quantize(colors=32)
    img.save(path, optimize=True)


def whiskers(s, scale=1.0):
    med = s["median"] * scale
    return [[med - s["min"] * scale], [s["max"] * scale - med]]


def grouped(ax, summary, backings, sizes, key, scale=1.0, log=True):
    """Bars per size, one per backing, with min-max whiskers."""
    n = len(backings)
    w = 0.8 / n
    for i, b in enumerate(backings):
        for j, gib in enumerate(sizes):
            s = summary.get(b, {}).get(gib, {}).get(key)
            if s is None:
                continue
            x = j + (i - (n - 1) / 2) * w
            if log and s["median"] <= 0:
                ax.annotate("0", (x, 0), xycoords=("data", "axes fraction"),
                            ha="center", va="bottom", fontsize=5)
                continue
            ax.bar(x, s["median"] * scale, w, yerr=whiskers(s, scale),
                   color=COLOR[b], label=LABEL[b] if j == 0 else None,
                   error_kw={"elinewidth": 0.6, "capsize": 1})
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([f"{g} GiB" for g in sizes])
    if log:
        ax.set_yscale("log")


def legend_above(fig, ax, ncol=6):
    h, l = ax.get_legend_handles_labels()
    fig.legend(h, l, ncol=ncol, frameon=False, loc="lower center",
               bbox_to_anchor=(0.5, 0.98))


def hbars(ax, items, fmt):
    """Horizontal bars (label, summary, colour), log scale, values printed."""
    for y, (label, s, color) in enumerate(items):
        if s is None:
            continue
        if s["median"] <= 0:
            ax.annotate(" 0", (0, y), xycoords=("axes fraction", "data"),
                        va="center", fontsize=6)
            continue
        ax.barh(y, s["median"], 0.7, color=color)
        ax.annotate(" " + fmt(s["median"]), (s["median"], y), va="center",
                    fontsize=6)
    ax.set_yticks(range(len(items)))
    ax.set_yticklabels([i[0] for i in items])
    ax.invert_yaxis()
    ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo, hi * 30)


def vbars(ax, items, fmt, log=False):
    """Vertical bars (label, summary, colour) with whiskers and values."""
    for x, (label, s, color) in enumerate(items):
        ax.bar(x, s["median"], 0.6, color=color, yerr=whiskers(s),
               error_kw={"elinewidth": 0.6, "capsize": 1})
        ax.annotate(fmt(s["median"]), (x, s["max"]), ha="center",
                    va="bottom", fontsize=6)
    ax.set_xticks(range(len(items)))
    ax.set_xticklabels([i[0] for i in items])
    if log:
        ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * (3 if log else 1.12))


def plots(outdir, summary, sizes, backings, nruns, churn, memcached):
    plt = plot_setup()
    runs = f"median of {nruns} runs, whiskers min-max"
    made = []

    fig, ax = plt.subplots(figsize=(6.4, 2.4))
    grouped(ax, summary, backings, sizes, "first_touch_s")
    ax.set_ylabel("seconds (log)")
    ax.set_title(f"First touch, one write per 4 KiB page (QEMU TCG; {runs})",
                 pad=16)
    legend_above(fig, ax)
    made.append("first_touch.png")
    save(plt, fig, os.path.join(outdir, made[-1]))

    g = sizes[0]
    fig, axes = plt.subplots(1, 3, figsize=(7.6, 1.9), sharey=True)
    for ax, key, title in zip(
            axes, ["faults_per_gib", "page_table_bytes_per_gib",
                   "metadata_bytes_per_gib"],
            ["page faults per GiB", "page-table bytes per GiB",
             "mm metadata bytes per GiB"]):
        hbars(ax, [(LABEL[b], summary.get(b, {}).get(g, {}).get(key),
                    COLOR[b]) for b in backings], lambda v: f"{v:,.0f}")
        ax.set_title(f"{title} ({g} GiB)")
    made.append("per_gib.png")
    save(plt, fig, os.path.join(outdir, made[-1]))

    fig, axes = plt.subplots(1, 2, figsize=(7.2, 2.2),
                             gridspec_kw={"width_ratios": [2, 1]})
    grouped(axes[0], summary, backings, sizes, "free_ms")
    axes[0].set_title("free (munmap), ms (log)", pad=16)
    legend_above(fig, axes[0])
    vbars(axes[1], [(f"{g} GiB", summary["som"][g]["rezero_ms"], COLOR["som"])
                    for g in sizes if summary.get("som", {}).get(g, {})
                    .get("rezero_ms")], lambda v: f"{v:,.0f}")
    axes[1].set_title("som: until the pool re-zeroed it, ms", pad=16)
    made.append("free.png")
    save(plt, fig, os.path.join(outdir, made[-1]))

    fig, ax = plt.subplots(figsize=(6.4, 2.2))
    grouped(ax, summary, backings, sizes, "gups_vs_som", log=False)
    ax.axhline(1.0, color="black", lw=0.5)
    ax.set_ylabel("updates/s, som = 1")
    ax.set_title("Random 8-byte updates over the buffer (TCG: indicative only)",
                 pad=16)
    legend_above(fig, ax)
    made.append("gups.png")
    save(plt, fig, os.path.join(outdir, made[-1]))

    if churn or memcached:
        fig, axes = plt.subplots(1, 3, figsize=(7.6, 2.2),
                                 gridspec_kw={"width_ratios": [4, 2, 2]})
        col = {"som-2m": COLOR["som"], "som-1g": COLOR["som"],
               "thp-2m": COLOR["thp"], "hugetlb-1g": COLOR["hugetlb"]}
        ax = axes[0]
        for x, c in enumerate(churn.values()):
            for dx, key, alpha, label in (
                    (-0.2, "ops_per_s", 0.4, "wall clock"),
                    (0.2, "ops_per_s_zeroing", 1.0, "zeroing included")):
                st = c[key]
                ax.bar(x + dx, st["median"], 0.4, color=col[c["kind"]],
                       alpha=alpha, yerr=whiskers(st),
                       label=label if x == 0 else None,
                       error_kw={"elinewidth": 0.6, "capsize": 1})
                ax.annotate(f"{st['median']:,.0f}", (x + dx, st["max"]),
                            ha="center", va="bottom", fontsize=5)
        ax.set_xticks(range(len(churn)))
        ax.set_xticklabels([f"{c['kind'].replace('-', ' ')}\nx{c['ops']}"
                            for c in churn.values()])
        ax.set_yscale("log")
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi * 3)
        ax.legend(frameon=False, loc="upper right")
        ax.set_title("allocate, write, free: ops/s")
        for ax, key, title in ((axes[1], "ops_per_s", "memcached ops/s"),
                               (axes[2], "p99_us", "memcached p99, us")):
            vbars(ax, [(name, memcached[a][key], color) for a, name, color in
                       (("glibc", "glibc", COLOR["thp"]),
                        ("som", "somrun", COLOR["som"])) if a in memcached],
                  lambda v: f"{v:,.0f}")
            ax.set_title(title)
        made.append("pool_memcached.png")
        save(plt, fig, os.path.join(outdir, made[-1]))
    return made


META_PARTS = ("chunks", "chunk_bits", "pool", "sources", "source_tables",
              "regions", "table_split", "table_nodes")
META_LAYOUTS = {
    "empty": "nothing mapped",
    "whole": "mapped whole, 1 GiB entries",
    "split": "mapped in 2 MiB blocks",
}


def fit(points):
    """Least-squares line through (x, y) points: (slope, intercept)."""
    n = len(points)
    if n < 2:
        return None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if not sxx:
        return None
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return slope, my - slope * mx


def meta_summary(recs):
    """som's metadata by pool size and layout, and the fits of each."""
    metas = [d for k, d in recs if k == "meta" and d.get("layout") in
             META_LAYOUTS]
    hvo = next((d for k, d in recs if k == "meta" and
                d.get("layout") == "hvo"), None)
    out = {"pools_gib": sorted({d["pool_gib"] for d in metas}),
           "layouts": {}, "hvo": hvo}
    for layout in META_LAYOUTS:
        rows = sorted((d for d in metas if d["layout"] == layout),
                      key=lambda d: d["pool_gib"])
        if not rows:
            continue
        fits = {}
        # All sizes; and from 2 GiB, where a region's table has its node.
        for name, sel in (("all", rows),
                          ("from_2", [d for d in rows if d["pool_gib"] >= 2])):
            parts = {}
            for part in ("total",) + META_PARTS:
                f = fit([(d["pool_gib"], d[part]) for d in sel])
                if f:
                    parts[part] = {"per_gib": f[0], "fixed": f[1]}
            fits[name] = parts
        out["layouts"][layout] = {"rows": rows, "fit": fits}
    return out


def meta_table(meta):
    """The metadata section of table.txt."""
    if not meta["layouts"]:
        return ""
    pools = meta["pools_gib"]
    hvo = meta["hvo"] or {}
    sp, hv = hvo.get("memmap_per_gib"), hvo.get("hvo_per_gib")
    lines = [
        "",
        "som metadata, everything som allocates (sysfs metadata_bytes and "
        "its parts), with the whole pool",
        f"in each state, for pools of {', '.join(map(str, pools))} GiB: "
        "bytes per GiB and fixed bytes from a least-squares",
        "line through the totals, over all sizes and over those from 2 GiB "
        "(from 2 GiB a region's table has",
        "its one xarray node, 576 bytes for up to 64 GiB; a 1 GiB region "
        "keeps its only entry in the xarray's root):",
        "",
        f"{'':30}{'per GiB':>9}{'fixed':>8}{'per GiB':>10}{'fixed':>8}"
        f"{'x floor':>9}{'struct page /':>15}{'HVO /':>8}",
        f"{'':30}{'(all sizes)':>17}{'(from 2 GiB)':>18}",
    ]
    for layout, label in META_LAYOUTS.items():
        m = meta["layouts"].get(layout)
        if not m or "total" not in m["fit"].get("all", {}):
            continue
        fa, f2 = m["fit"]["all"], m["fit"].get("from_2", {})
        per = fa["total"]["per_gib"]
        per2 = f2.get("total", {}).get("per_gib")
        best = per2 if per2 is not None else per
        lines.append(
            f"{label:30}{per:9,.0f}{fa['total']['fixed']:8,.0f}"
            + (f"{per2:10,.0f}{f2['total']['fixed']:8,.0f}" if per2 is not None
               else f"{'-':>10}{'-':>8}")
            + f"{best / 8:9,.1f}"
            f"{(sp / best if sp and best > 0 else 0):15,.0f}"
            f"{(hv / best if hv and best > 0 else 0):8,.1f}")
        byp = ", ".join(f"{p} {fa[p]['per_gib']:.0f}" for p in META_PARTS
                        if p in fa and round(fa[p]["per_gib"]))
        lines.append(f"{'':32}per GiB by part (all sizes): {byp}")
    if sp:
        lines.append(f"{'struct page (memmap of RAM)':30}{sp:9,.0f}")
    if hv:
        lines.append(f"{'HugeTLB 1 GiB page with HVO':30}{hv:9,.0f}")
    lines += [
        "",
        "x floor: how many times one 8-byte page-table entry per GiB (the "
        "least any mapping needs), from",
        "2 GiB. struct page / and HVO /: how many times som's per GiB fits "
        "in theirs (measured in the same boot).",
        "Parts: chunks = the pool's 96-byte descriptor per GiB; "
        "source_tables = 8 bytes per GiB in a source's",
        "chunk table; chunk_bits = 128-byte per-block bits of a chunk whose "
        "blocks differ (and the pool's one spare); table_split =",
        "a region's 808-byte split GiB; table_nodes = its table's xarray "
        "nodes; pool, sources, regions, charges (the records",
        "of the cgroup and the user a region is charged to): fixed.",
        "Totals (bytes) by pool size:",
        f"{'':30}" + "".join(f"{str(g) + ' GiB':>10}" for g in pools),
    ]
    for layout, label in META_LAYOUTS.items():
        m = meta["layouts"].get(layout)
        if not m:
            continue
        by = {d["pool_gib"]: d["total"] for d in m["rows"]}
        lines.append(f"{label:30}" + "".join(
            f"{by[g]:10,}" if g in by else f"{'-':>10}" for g in pools))
    return "\n".join(lines) + "\n"


PROGRAM_ALLOCS = ("som", "som+pack", "anon-thp", "anon")
# Programs whose heap somrun makes som whole: packing_frontier() models
# them.
FRONTIER_PROGRAMS = ("redis",)


AGE_ENTRIES = (("1g", "som, 1 GiB entries"), ("2m", "som, 2 MiB entries"),
               ("4k", "som, 4 KiB entries"),
               ("mglru-thp", "anonymous THP, MGLRU pass"),
               ("mglru-4k", "anonymous 4 KiB, MGLRU pass"))


def age_summary(recs):
    """som_bench age lines -> per entry size, figures per GiB."""
    out = {}
    for entry, _ in AGE_ENTRIES:
        runs = [d for k, d in recs if k == "age" and d["entry"] == entry]
        if not runs:
            continue
        per_gib = lambda key, scale: stat(
            [d[key] * GIB / d["bytes"] / scale for d in runs])
        out[entry] = {
            "scan_ms_per_gib": per_gib("scan_ns", 1e6),
            "refaults_per_gib": per_gib("refaults", 1),
            "warm_ms_per_gib": per_gib("warm_ns", 1e6),
            "after_ms_per_gib": per_gib("after_ns", 1e6),
            "touch_ratio": stat([d["after_ns"] / d["warm_ns"] for d in runs
                                 if d["warm_ns"] > 0]),
        }
    return out


def age_table(ages):
    if not ages:
        return ""
    out = io.StringIO()
    p = lambda s="": print(s, file=out)
    p()
    p("Aging: one scan, per GiB".ljust(40) +
      "scan, ms".rjust(24) + "refaults".rjust(14) +
      "next touch, ms: warm".rjust(24) + "after the scan".rjust(30) +
      "x warm".rjust(20))
    for entry, label in AGE_ENTRIES:
        a = ages.get(entry)
        if not a:
            continue
        p(label.ljust(40) +
          cell(a["scan_ms_per_gib"], 2).rjust(24) +
          cell(a["refaults_per_gib"], 0).rjust(14) +
          cell(a["warm_ms_per_gib"], 2).rjust(24) +
          cell(a["after_ms_per_gib"], 2).rjust(30) +
          cell(a["touch_ratio"], 1).rjust(20))
    for note in (
            "A scan (sysfs aging/scan) looks at which 2 MiB pieces the "
            "owner's entries map, ages the others and unmaps the entries "
            "(section 8 of the admin guide): scan is its own clock "
            "(aging/scan_ns) over 1 GiB (128 MiB for 4 KiB entries, scaled "
            "to a GiB); refaults: the faults of that entry size the owner's "
            "next touch took (exact: one per entry); next touch: one write "
            "per entry, before the scan (warm) and right after it (cold, "
            "every entry refaulted). Nothing else is mapped from the pool "
            "meanwhile.",
            "MGLRU pass: the kernel's own aging of anonymous memory, for "
            "comparison: one '+ memcg node max_gen 200 1' written to "
            "/sys/kernel/debug/lru_gen for each node of the process's memcg "
            "(timed around the writes), which walks the page tables of "
            "every process in the memcg and clears accessed bits instead "
            "of unmapping: refaults are the minor faults of the next touch "
            "(none), and the next touch costs what a warm one does. 1 GiB "
            "of THP, 128 MiB of 4 KiB pages scaled to a GiB.",):
        p(textwrap.fill(note, 100, subsequent_indent="  "))
    return out.getvalue()


TIER_ENTRIES = (("2m", "som, 256 MiB on 2 MiB entries"),
                ("1g", "som, a GiB on one 1 GiB entry"),
                ("kernel-thp", "kernel move_pages(), 256 MiB of THP"))


def tier_summary(recs):
    """som_bench tier lines -> per entry, MiB/s each way."""
    out = {}
    for entry, _ in TIER_ENTRIES:
        runs = [d for k, d in recs if k == "tier" and d["entry"] == entry]
        if not runs:
            continue
        rate = lambda key, ns: stat([d[key] / MIB / (d[ns] / 1e9)
                                     for d in runs if d[ns] > 0])
        out[entry] = {
            "demote_mib_s": rate("demoted", "demote_ns"),
            "promote_mib_s": rate("promoted", "promote_ns"),
            "moved_share": stat([(d["demoted"] + d["promoted"]) /
                                 (2 * d["bytes"]) for d in runs]),
        }
    return out


def tier_table(tiers):
    if not tiers:
        return ""
    out = io.StringIO()
    p = lambda s="": print(s, file=out)
    p()
    p("Tiers: moving memory between nodes".ljust(40) +
      "demotion, MiB/s".rjust(24) + "promotion, MiB/s".rjust(24) +
      "moved / asked".rjust(18))
    for entry, label in TIER_ENTRIES:
        t = tiers.get(entry)
        if not t:
            continue
        p(label.ljust(40) + cell(t["demote_mib_s"], 0).rjust(24) +
          cell(t["promote_mib_s"], 0).rjust(24) +
          cell(t["moved_share"], 2).rjust(18))
    for note in (
            "A boot of its own with two NUMA nodes: the pool on node 0 is "
            "the fast tier, a 1 GiB range on node 1 added as the slow one "
            "(admin guide, section 9). som: a som file on node 0, filled, "
            "aged cold by two scans and demoted by one pass "
            "(tiering/run), then touched, scanned and promoted by the "
            "next; wall time around each pass, bytes from the counters "
            "(demoted_bytes, promoted_bytes), the data checked after each. "
            "2 MiB blocks move one by one (a copy and an entry zapped "
            "each); a GiB on one chunk moves whole and keeps its 1 GiB "
            "entry. kernel: move_pages(2) of 256 MiB of anonymous THP "
            "from node 0 to node 1 and back, as the kernel's own demotion "
            "and NUMA migration move pages. QEMU TCG: both nodes are the "
            "host's RAM, so the rates say what the software costs, not "
            "what a slower tier would.",):
        p(textwrap.fill(note, 100, subsequent_indent="  "))
    return out.getvalue()


SWAP_KINDS = (("som", "som: SOM_IOC_PAGEOUT, store on /dev/ram0"),
              ("kernel", "kernel: MADV_PAGEOUT, swap on /dev/ram1"))


def swap_summary(recs):
    """som_bench swap lines -> per kind, MiB/s each way and a piece's time."""
    out = {}
    for kind, _ in SWAP_KINDS:
        runs = [d for k, d in recs if k == "swap" and d["kind"] == kind]
        if not runs:
            continue
        out[kind] = {
            "out_mib_s": stat([d["bytes"] / MIB / (d["out_ns"] / 1e9)
                               for d in runs if d["out_ns"] > 0]),
            "in_mib_s": stat([d["bytes"] / MIB / (d["in_ns"] / 1e9)
                              for d in runs if d["in_ns"] > 0]),
            "piece_us_p50": stat([d["piece_ns_p50"] / 1e3 for d in runs]),
            "piece_us_max": stat([d["piece_ns_max"] / 1e3 for d in runs]),
            "swapped_share": stat([d["swapped"] / d["bytes"] for d in runs]),
        }
    return out


PRESSURE_KINDS = (("som", "som: overcommit, store on /dev/ram0"),
                  ("kernel", "kernel: memory.max 64M, swap on /dev/ram1"))


def pressure_summary(recs):
    """som_bench pressure lines -> per kind, each pass's MiB/s and counts."""
    out = {}
    for kind, _ in PRESSURE_KINDS:
        runs = [d for k, d in recs if k == "pressure" and d["kind"] == kind]
        if not runs:
            continue
        out[kind] = {
            "bytes": runs[0]["bytes"], "limit": runs[0]["limit"],
            "first_mib_s": stat([d["bytes"] / MIB / (d["first_ns"] / 1e9)
                                 for d in runs if d["first_ns"] > 0]),
            "second_mib_s": stat([d["bytes"] / MIB / (d["second_ns"] / 1e9)
                                  for d in runs if d["second_ns"] > 0]),
            "out_mib": stat([d["out"] / MIB for d in runs]),
            "in_mib": stat([d["in"] / MIB for d in runs]),
            "majflt": stat([d["majflt"] for d in runs]),
        }
    return out


def pressure_table(pres):
    if not pres:
        return ""
    out = io.StringIO()
    p = lambda s="": print(s, file=out)
    p()
    p("96 MiB touched twice, 64 MiB to hold it".ljust(44) +
      "write pass, MiB/s".rjust(20) + "check pass, MiB/s".rjust(20) +
      "out, MiB".rjust(16) + "back, MiB".rjust(16) +
      "major faults".rjust(18))
    for kind, label in PRESSURE_KINDS:
        s = pres.get(kind)
        if not s:
            continue
        p(label.ljust(44) + cell(s["first_mib_s"], 0).rjust(20) +
          cell(s["second_mib_s"], 0).rjust(20) +
          cell(s["out_mib"], 0).rjust(16) + cell(s["in_mib"], 0).rjust(16) +
          cell(s["majflt"], 0).rjust(18))
    if "som" in pres and "kernel" in pres:
        k, s = pres["kernel"], pres["som"]
        ratio = lambda a, b: (a["median"] / b["median"]
                              if a and b and b["median"] else None)
        r1 = ratio(s["first_mib_s"], k["first_mib_s"])
        r2 = ratio(s["second_mib_s"], k["second_mib_s"])
        p("som / kernel".ljust(44) +
          (f"{r1:.2f}x" if r1 else "-").rjust(20) +
          (f"{r2:.2f}x" if r2 else "-").rjust(20))
    for note in (
            "A program whose memory is 1.5 times what it may hold, "
            "touched in order twice: a word written in every 4 KiB, then "
            "every one checked. som: swap/overcommit on, a store of 256 "
            "MiB on a RAM disk, all of the pool but 64 MiB reserved by "
            "an untouched mapping; faults that find no free block wait "
            "while the som_reclaim worker pages out the coldest blocks, "
            "16 MiB a pass (the program's own: nothing else is in use). "
            "kernel: anonymous 4 KiB pages (MADV_NOHUGEPAGE) in a cgroup "
            "with memory.max 64 MiB (the benchmark's own few MiB count "
            "too), swap on a RAM disk; reclaim pages out on the faults. "
            "out and back: swap/out_bytes and in_bytes, or pswpout and "
            "pswpin of /proc/vmstat. Major faults: the process's (som "
            "counts one per fault that waited for a pass). QEMU TCG: "
            "timings indicative, ratios in one run.",):
        p(textwrap.fill(note, 100, subsequent_indent="  "))
    return out.getvalue()


def swap_table(swaps):
    if not swaps:
        return ""
    out = io.StringIO()
    p = lambda s="": print(s, file=out)
    p()
    p("Swap: 256 MiB out, then back 2 MiB".ljust(44) +
      "out, MiB/s".rjust(18) + "back, MiB/s".rjust(18) +
      "2 MiB back, us".rjust(24) + "worst, us".rjust(26) +
      "out / asked".rjust(14))
    for kind, label in SWAP_KINDS:
        s = swaps.get(kind)
        if not s:
            continue
        p(label.ljust(44) + cell(s["out_mib_s"], 0).rjust(18) +
          cell(s["in_mib_s"], 0).rjust(18) +
          cell(s["piece_us_p50"], 0).rjust(24) +
          cell(s["piece_us_max"], 0).rjust(26) +
          cell(s["swapped_share"], 2).rjust(14))
    if "som" in swaps and "kernel" in swaps:
        k, s = swaps["kernel"], swaps["som"]
        ratio = lambda a, b: (a["median"] / b["median"]
                              if a and b and b["median"] else None)
        r_out = ratio(s["out_mib_s"], k["out_mib_s"])
        r_in = ratio(s["in_mib_s"], k["in_mib_s"])
        r_piece = ratio(k["piece_us_p50"], s["piece_us_p50"])
        p("som / kernel".ljust(44) +
          (f"{r_out:.2f}x" if r_out else "-").rjust(18) +
          (f"{r_in:.2f}x" if r_in else "-").rjust(18) +
          (f"{r_piece:.2f}x faster" if r_piece else "-").rjust(24))
    for note in (
            "Both on a RAM disk (brd), the same I/O path for each and no "
            "disk: what the software costs. som: 256 MiB of /dev/som "
            "filled, one SOM_IOC_PAGEOUT call (out), then one word read "
            "in each 2 MiB block, each read timed: the fault that reads "
            "the block back through the store's page cache (a worker "
            "does the I/O), allocates a block (zeroed ahead by the pool "
            "or on the spot) and maps it. kernel: 256 MiB of anonymous "
            "4 KiB pages (MADV_NOHUGEPAGE) filled, one MADV_PAGEOUT call, "
            "then every page of each 2 MiB read, each 2 MiB timed: 512 "
            "faults with swap readahead. \"2 MiB back\" is the median of "
            "the 128 pieces, \"worst\" the slowest; \"back, MiB/s\" their "
            "sum. out / asked: swap/used_bytes or the process's VmSwap "
            "over 256 MiB. Data checked word for word after each run. "
            "QEMU TCG: timings indicative, ratios in one run.",):
        p(textwrap.fill(note, 100, subsequent_indent="  "))
    return out.getvalue()


def programs_summary(recs):
    """SOMBENCH program lines -> {name: {alloc: {phase: record}}}."""
    out = {}
    for k, d in recs:
        if k == "program":
            out.setdefault(d["name"], {}).setdefault(d["alloc"], {})[
                d["phase"]] = d
    return out


def pack_threshold(recs):
    """The packing threshold of the som+pack rows (256 before it was
    printed)."""
    return next((d["threshold"] for k, d in recs
                 if k == "program_pack" and "threshold" in d), 256)


def packing_frontier(progs):
    """What packing the emptiest 2 MiB regions would give, from the
    anon-thp rows' regions by how full they are (blk_fill)."""
    lines = []
    for name, by in progs.items():
        # Under somrun redis's whole heap is som; the others' mallocs
        # below 2 MiB stay ordinary memory, which regions do not model.
        if name not in FRONTIER_PROGRAMS:
            continue
        d = by.get("anon-thp", {}).get("churn")
        if not d or not isinstance(d.get("blk_fill"), str):
            continue
        fill = [tuple(int(x) for x in f.split("/"))
                for f in d["blk_fill"].split(",")]
        regions = sum(c for c, _ in fill)
        in_regions = sum(b for _, b in fill)
        # Anonymous memory outside the heaps' regions stays as it is.
        rest = max(d["rss_anon"] - in_regions, 0)
        if not lines:
            lines = [
                "",
                "Packing the emptiest 2 MiB regions (redis: somrun makes its "
                "whole heap som), worked out from",
                "anon-thp's pages after the churn (same program and "
                "commands; jemalloc places objects the same",
                "on both): the regions with at most 'pages' of their 512 "
                "present go to 4 KiB entries, every other",
                "region is a whole block on a 2 MiB entry. memory: against "
                "anon-thp's RssAnon. 2M %: of the bytes",
                "mapped. THP held: anon-thp's THPs mapped in part hold this "
                "much more than their mapped pages",
                "until reclaim splits them.",
                "",
                f"{'program':17}{'pages':>6}{'regions':>9}{'4K MiB':>8}"
                f"{'memory MiB':>12}{'vs anon-thp':>13}{'2M %':>7}",
            ]
        packed = small = 0
        for i in range(len(fill) + 1):
            big = (regions - packed) * 2 * MIB
            mem = big + small + rest
            share = 100 * big / (big + small) if big + small else 0
            lines.append(
                f"{name:17}{i * 64:6d}{packed:9d}{small / MIB:8.1f}"
                f"{mem / MIB:12,.1f}"
                f"{100 * (mem - d['rss_anon']) / d['rss_anon']:+12.1f}%"
                f"{share:7.1f}")
            if i < len(fill):
                packed += fill[i][0]
                small += fill[i][1]
        if "blk_thp_unmapped" in d:
            lines.append(f"{name:17}THP held: "
                         f"{d['blk_thp_unmapped'] / MIB:,.1f} MiB")
    return lines


def programs_table(progs, threshold=256):
    """The entries-under-real-allocators section of table.txt."""
    if not progs:
        return ""
    lines = [
        "",
        "Entries under real allocators: each program filled, then churned "
        "(freed and allocated again),",
        "under somrun and on anonymous memory (anon-thp: THP on; anon: "
        "redis's default, THP off for",
        f"itself; som+pack: som with packing on, threshold {threshold} "
        "pages, and for redis and memcached a pass",
        "before the churn's sample; redis's values are all read before "
        "it, so that its packed pages are",
        "mapped). Shares of the bytes mapped: som by its 1 GiB/2 MiB/4 KiB "
        "entries; anonymous memory by",
        "THP (AnonHugePages) and 4 KiB pages. used: som blocks allocated "
        "plus ordinary RssAnon; held: also",
        "the blocks som reserved for mappings not touched yet (no other "
        "process can have them);",
        "app: what the program counts as used (redis used_memory, memcached "
        "bytes). large %: of all its",
        "memory (som and ordinary), the share on 2 MiB or 1 GiB entries. "
        "ops/s after the churn",
        "(redis SET, memcached mixed, stress-ng bogo ops; TCG: indicative), "
        "and against anon-thp.",
        "in 2M MiB (anonymous memory): the 2 MiB regions of its heaps "
        "(mappings of 2 MiB or more but thread",
        "stacks, and brk) that hold a page, in MiB: what whole 2 MiB "
        "blocks would take for the same pages;",
        "<=half: how many of those regions hold at most 256 of their 512 "
        "pages.",
        "",
        f"{'program':17}{'alloc':10}{'phase':7}{'1G %':>6}{'2M %':>6}"
        f"{'4K %':>6}{'large %':>8}{'VmPTE KiB':>11}{'used MiB':>10}"
        f"{'held MiB':>10}"
        f"{'app MiB':>9}"
        f"{'ops/s':>10}{'x anon-thp':>12}{'in 2M MiB':>11}{'<=half':>8}",
    ]
    for name, by in progs.items():
        base = by.get("anon-thp", {}).get("churn", {}).get("ops_per_s")
        for alloc in PROGRAM_ALLOCS:
            for phase in ("fill", "churn"):
                d = by.get(alloc, {}).get(phase)
                if not d:
                    continue
                if alloc.startswith("som"):
                    b1, b2, b4 = (d["e1g"] * GIB, d["e2m"] * 2 * MIB,
                                  d["e4k"] * 4096)
                    used = d["som_used"] + d["rss_anon"]
                    held = d["som_held"] + d["rss_anon"]
                else:
                    b1, b2 = 0, d["thp_bytes"]
                    b4 = max(d["rss_anon"] - b2, 0)
                    used = held = d["rss_anon"]
                tot = b1 + b2 + b4
                pct = [100 * b / tot if tot else 0 for b in (b1, b2, b4)]
                # Of all its memory: som's entries and the ordinary pages
                # beside them (for anon, the same shares as above).
                every = tot + (d["rss_anon"] if alloc.startswith("som") else 0)
                big = b1 + b2 + (d["thp_bytes"] if alloc.startswith("som")
                                 else 0)
                large = 100 * big / every if every else 0
                ops = d.get("ops_per_s") or 0
                ratio = (f"{ops / base:12.2f}" if phase == "churn" and ops
                         and base else f"{'':12}")
                lines.append((
                    f"{name:17}{alloc:10}{phase:7}"
                    + "".join(f"{v:6.1f}" for v in pct)
                    + f"{large:8.1f}"
                    + f"{d['pte_bytes'] / 1024:11,.0f}{used / MIB:10,.1f}"
                    + f"{held / MIB:10,.1f}"
                    + (f"{d['app_bytes'] / MIB:9,.1f}" if d["app_bytes"]
                       else f"{'-':>9}")
                    + (f"{ops:10,.0f}" if phase == "churn" and ops
                       else f"{'':10}")
                    + ratio
                    + (f"{d['blk_regions'] * 2:11,d}{d['blk_sparse']:8,d}"
                       if d.get("blk_regions") else "")).rstrip())
    return "\n".join(lines + packing_frontier(progs)) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raw", required=True)
    ap.add_argument("--host")
    ap.add_argument("--command", default="vm/run bench")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args()

    recs = parse(args.raw)
    info = next((d for k, d in recs if k == "info"), {})
    config = next((d for k, d in recs if k == "config"), {})
    host = {}
    if args.host and os.path.exists(args.host):
        with open(args.host) as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep:
                    host[k] = v
    touches = [d for k, d in recs if k == "touch"]
    meta = meta_summary(recs)
    progs = programs_summary(recs)
    ages = age_summary(recs)
    tiers = tier_summary(recs)
    swaps = swap_summary(recs)
    pres = pressure_summary(recs)
    if not touches and not meta["layouts"] and not progs and not ages \
            and not tiers and not swaps and not pres:
        print("report: no measurements in " + args.raw, file=sys.stderr)
        return 1
    if not touches:
        os.makedirs(args.out, exist_ok=True)
        text = age_table(ages) + tier_table(tiers) + swap_table(swaps) + \
            pressure_table(pres) + meta_table(meta) + programs_table(progs, pack_threshold(recs))
        skips = [d for k, d in recs if k in ("skip", "error")]
        if skips:
            text += "\nnot measured: " + "; ".join(
                " ".join(f"{k}={v}" for k, v in d.items()) for d in skips) + "\n"
        with open(os.path.join(args.out, "table.txt"), "w") as f:
            f.write(text)
        sys.stdout.write(text)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump({"command": args.command, "host": host,
                       "metadata": meta, "programs": progs, "aging": ages,
                       "tiers": tiers, "swap": swaps, "pressure": pres,
                       "raw": [dict(d, kind=k) for k, d in recs]}, f,
                      indent=1)
        return 0

    sizes = sorted({d["gib"] for d in touches})
    backings = [b for b in BACKINGS if any(d["backing"] == b for d in touches)]
    nruns = max(d["run"] for d in touches)
    summary = {}
    for b in backings:
        for gib in sizes:
            runs = [d for d in touches if d["backing"] == b and d["gib"] == gib]
            if not runs:
                continue
            som = {d["run"]: d for d in touches
                   if d["backing"] == "som" and d["gib"] == gib}
            summary.setdefault(b, {})[gib] = touch_metrics(runs, som)
            if b == "som":
                summary[b][gib]["zeroing_gib_per_s"] = stat(
                    [d["gib"] / (d["rezero_ns"] / 1e9) for d in runs
                     if d["rezero_ns"] > 0])

    churn = {}
    for kind in CHURN:
        for ops in sorted({d["ops"] for k, d in recs
                           if k == "churn" and d["kind"] == kind}):
            runs = [d for k, d in recs
                    if k == "churn" and d["kind"] == kind and d["ops"] == ops]
            som = kind.startswith("som")
            churn[f"{kind}:{ops}"] = {
                "kind": kind, "ops": ops, "som": som,
                "label": f"{CHURN[kind]}, {ops:,} in a row",
                "ops_per_s": stat([d["ops"] / (d["ns"] / 1e9) for d in runs]),
                "ops_per_s_zeroing": stat([
                    d["ops"] / ((d["ns"] + d.get("zw_ns", 0)) / 1e9)
                    for d in runs]),
                "fault_zeroed_pct": stat([
                    100 * d.get("zf_bytes", 0) / (d["ops"] * d["bytes_per_op"])
                    for d in runs]) if som else None,
                "faults_per_op": stat([d["faults"] / d["ops"] for d in runs]),
                "som_faults_per_op": stat([(d["som_pud"] + d["som_pmd"] +
                                            d["som_pte"]) / d["ops"]
                                           for d in runs]),
                "runs": runs,
            }

    memcached = {}
    mruns = [d for k, d in recs if k == "memcached"]
    for alloc in ("glibc", "som"):
        runs = [d for d in mruns if d["alloc"] == alloc and d.get("rc") == 0]
        if runs:
            memcached[alloc] = {
                "ops_per_s": stat([d["ops_per_s"] for d in runs]),
                "p50_us": stat([d["p50_us"] for d in runs]),
                "p99_us": stat([d["p99_us"] for d in runs]),
                "max_us": stat([d["max_us"] for d in runs]),
                "som_bytes": stat([d["som_bytes"] for d in runs]),
            }
    if mruns:
        d = mruns[0]
        memcached["load"] = (
            f"memcached -m {d['cache_mb']} -L -t 2; {d['conns']} connections, "
            f"{d['keys']} keys of {d['value_bytes']} B set first, then "
            f"{d['ops']} operations ({d['get_pct']}% gets, checked), closed loop")

    skips = [d for k, d in recs if k in ("skip", "error")]
    os.makedirs(args.out, exist_ok=True)
    text = table(summary, sizes, backings, nruns, churn, memcached, info,
                 touches) + age_table(ages) + tier_table(tiers) + \
        swap_table(swaps) + pressure_table(pres) + meta_table(meta) + \
        programs_table(progs, pack_threshold(recs))
    if skips:
        text += "\nnot measured: " + "; ".join(
            " ".join(f"{k}={v}" for k, v in d.items()) for d in skips) + "\n"
    with open(os.path.join(args.out, "table.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)

    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({
            "command": args.command, "host": host, "guest": info,
            "config": config, "runs": nruns, "sizes_gib": sizes,
            "summary": {b: {str(g): v for g, v in s.items()}
                        for b, s in summary.items()},
            "alloc_free": {k: {x: v for x, v in c.items() if x != "runs"}
                           for k, c in churn.items()},
            "memcached": memcached, "metadata": meta, "programs": progs,
            "aging": ages, "tiers": tiers, "swap": swaps, "pressure": pres,
            "skipped": skips,
            "raw": [dict(d, kind=k) for k, d in recs],
        }, f, indent=1)

    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["section", "backing", "gib", "metric", "runs", "median",
                    "min", "max"])
        for b, by in summary.items():
            for gib, ms in by.items():
                for key, s in ms.items():
                    if s:
                        w.writerow(["touch", b, gib, key, s["n"], s["median"],
                                    s["min"], s["max"]])
        for kind, c in churn.items():
            for key in ("ops_per_s", "ops_per_s_zeroing", "fault_zeroed_pct",
                        "faults_per_op", "som_faults_per_op"):
                s = c[key]
                if s:
                    w.writerow(["alloc_free", kind, "", key, s["n"],
                                s["median"], s["min"], s["max"]])
        for alloc in ("glibc", "som"):
            for key, s in memcached.get(alloc, {}).items():
                w.writerow(["memcached", alloc, "", key, s["n"], s["median"],
                            s["min"], s["max"]])

    if not args.no_plots:
        made = plots(args.out, summary, sizes, backings, nruns, churn,
                     memcached)
        print(f"\nreport: {args.out}/table.txt, results.json, results.csv, "
              + ", ".join(made))
    return 0


if __name__ == "__main__":
    sys.exit(main())
