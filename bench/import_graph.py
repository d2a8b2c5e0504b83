"""The shape of the import graph: cycles and imports that run up the layers (docs/architecture.md).

    .venv/bin/python bench/import_graph.py [--list]

Prints, for the packages `outreach_core`, `http_api`, `mcp_server`, `workers` and `outreach_app` (every
import counted, also those inside functions and under `TYPE_CHECKING`, as import-linter counts them):

- modules: how many, and how many imports between them;
- module cycles: the strongly connected components of the module graph with more than one module (their
  sizes), i.e. sets of files each reachable from the others;
- package cycles: sibling packages (or modules) of one parent that import each other in a circle, the
  relation the `acyclic_siblings` contract forbids;
- upward imports: imports from a module into a module of a higher layer (the layers below, which also
  name the modules of the old layout so that the figures before and after the restructuring compare);
- imports between lead peers: from one of leads, lists, labels, suppressions, enrichment, verification
  into another (the independence contract forbids them).

`--list` also prints each upward import and each cycle's modules. The contract itself (pyproject.toml,
`lint-imports`) is what keeps the figures at zero; this script only measures.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable

import grimp

PACKAGES = ("outreach_core", "http_api", "mcp_server", "workers", "outreach_app")
LEAD_PEERS = ("leads", "lists", "labels", "suppressions", "enrichment", "verification")
KERNEL_PACKAGES = ("kernel", "events", "db")  # db: the layout before issue 26 item 7

# (rank, layer): higher ranks may import lower ones, never the other way round
COMPOSITION, DOORS, CATALOGUE, DOMAINS, IMPORTS, PEERS, TARGETS, KERNEL = 8, 7, 6, 5, 4, 3, 2, 1
NAMES = {
    COMPOSITION: "composition root",
    DOORS: "doors and workers",
    CATALOGUE: "catalogue",
    DOMAINS: "domains",
    IMPORTS: "imports",
    PEERS: "lead peers",
    TARGETS: "targets (and billing)",
    KERNEL: "kernel",
}
OLD_NAMES = {
    # the layout before issue 16, placed where its code went
    "outreach_core.interface": CATALOGUE,
    "outreach_core.leads.imports": IMPORTS,
    "outreach_core.leads.import_merge": IMPORTS,
    "outreach_core.leads.targets": TARGETS,
}


def layer(module: str) -> int:
    """The layer of `module` (see docs/architecture.md, "Layers")."""
    parts = module.split(".")
    top = parts[0]
    if top == "outreach_app":
        return COMPOSITION
    if top in ("http_api", "mcp_server", "workers"):
        return DOORS
    for name, rank in OLD_NAMES.items():
        if module == name or module.startswith(name + "."):
            return rank
    if len(parts) == 1:
        return KERNEL
    second = parts[1]
    if second == "catalog":
        return CATALOGUE
    if second == "imports":
        return IMPORTS
    if second in LEAD_PEERS:
        return PEERS
    if second in ("targets", "billing"):
        return TARGETS
    if second in KERNEL_PACKAGES or (len(parts) == 2 and not _is_package(module)):
        return KERNEL
    return DOMAINS


_PACKAGES: set[str] = set()


def _is_package(module: str) -> bool:
    return module in _PACKAGES


def strongly_connected(nodes: Iterable[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return found


def sibling_cycles(modules: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Circles among the children of each package, imports of their descendants counted as theirs."""
    children: dict[str, set[str]] = defaultdict(set)
    for m in modules:
        parts = m.split(".")
        for depth in range(1, len(parts)):
            children[".".join(parts[:depth])].add(".".join(parts[: depth + 1]))
    cycles = []
    for parent, kids in sorted(children.items()):
        depth = parent.count(".") + 2
        between: dict[str, set[str]] = defaultdict(set)
        for importer, imported in ((a, b) for a, bs in edges.items() for b in bs):
            if importer.startswith(parent + ".") and imported.startswith(parent + "."):
                a, b = ".".join(importer.split(".")[:depth]), ".".join(imported.split(".")[:depth])
                if a != b and a in kids and b in kids:
                    between[a].add(b)
        cycles += [c for c in strongly_connected(sorted(kids), between) if len(c) > 1]
    return cycles


def main(argv: list[str]) -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    modules = set(graph.modules)
    _PACKAGES.update(m for m in modules if any(o.startswith(m + ".") for o in modules))
    edges: dict[str, set[str]] = {m: set(graph.find_modules_directly_imported_by(m)) for m in modules}
    imports = sum(len(v) for v in edges.values())
    cycles = [c for c in strongly_connected(sorted(modules), edges) if len(c) > 1]
    packages = sibling_cycles(modules, edges)
    upward = sorted(
        (a, b) for a, bs in edges.items() for b in bs if a.split(".")[0] in PACKAGES and layer(b) > layer(a)
    )
    across = sorted(
        (a, b)
        for a, bs in edges.items()
        for b in bs
        if layer(a) == layer(b) == PEERS and a.split(".")[1] != b.split(".")[1]
    )
    print(f"modules: {len(modules)}, imports between them: {imports}")
    print(
        f"module cycles: {len(cycles)}"
        + (f" (sizes {', '.join(str(len(c)) for c in cycles)})" if cycles else "")
        + f"; modules in a cycle: {sum(len(c) for c in cycles)}"
    )
    print(f"package cycles (siblings importing each other in a circle): {len(packages)}")
    print(f"upward imports: {len(upward)}")
    print(f"imports between lead peers (their independence): {len(across)}")
    by_layers: dict[tuple[int, int], int] = defaultdict(int)
    for a, b in upward:
        by_layers[(layer(a), layer(b))] += 1
    for (low_, high), n in sorted(by_layers.items()):
        print(f"    {NAMES[low_]} -> {NAMES[high]}: {n}")
    if "--list" in argv:
        for a, b in upward:
            print(f"  up: {a} -> {b}")
        for a, b in across:
            print(f"  across: {a} -> {b}")
        for c in cycles:
            print(f"  module cycle ({len(c)}): {', '.join(c)}")
        for c in packages:
            print(f"  package cycle: {' <-> '.join(c)}")


if __name__ == "__main__":
    main(sys.argv[1:])
