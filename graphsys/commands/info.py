"""``graphsys info``: counts, partition balance and edge-cut of a stored graph; with
``--degrees`` its degree statistics and distribution, density, reciprocity and
assortativity, with ``--diameter`` its diameter in hops."""

from __future__ import annotations

import math

from graphsys.commands._common import emit_json, graph_arg


def register(subparsers) -> None:
    p = subparsers.add_parser("info", help="describe a stored graph", description=__doc__)
    p.add_argument("graph", type=graph_arg, metavar="DIR|URI")
    p.add_argument("--json", action="store_true", help="print one JSON line")
    p.add_argument("--degrees", action="store_true",
                   help="also, of the default view (what the engines read: the default edge "
                        "set and those appended to it) and then of each stored edge set: "
                        "degree statistics and distribution (out, in and "
                        "total for a directed one), density, reciprocity and degree "
                        "assortativity, as NetworkX defines them (one pass over the edges; "
                        "reciprocity reads the sorted adjacency)")
    p.add_argument("--diameter", choices=("estimate", "exact"),
                   help="also, of the default view and each edge set: the diameter in hops "
                        "of its undirected view "
                        "(longest finite shortest path): the 4-sweep estimate with the "
                        "bounds it proves, or exact (iFUB)")
    p.set_defaults(func=run)


def run(args) -> int:
    from graphsys.storage.graph import open_graph
    from graphsys.storage.info import format_info, graph_info

    graph = open_graph(args.graph)
    info = graph_info(graph)
    extra = {}
    view = info.get("default_view") or []
    if len(view) > 1 and (args.degrees or args.diameter):
        # what the engines read when no edge set is named: its members as one edge set
        label = f"the default view ({', '.join(view)})"
        extra[label] = info["default_view_measures"] = _measures(graph, ",".join(view), args)
    for name in graph.edge_sets if (args.degrees or args.diameter) else ():
        extra[f"edge set {name}"] = info["edge_sets"][name]["measures"] = _measures(
            graph, name, args)
    if args.json:
        emit_json(info)
    else:
        print(format_info(info))
        for label, m in extra.items():
            print("\n".join(_lines(label, m)))
    return 0


def _measures(graph, name: str, args) -> dict:
    from graphsys import measures

    es = graph.edge_set(name)
    out: dict = {}
    if args.degrees:
        directions = ("both",) if es.undirected else ("both", "out", "in")
        out["degrees"] = [measures.degree_stats(graph, d, edge_set=name).to_dict()
                          for d in directions]
        out["density"] = measures.density(graph, edge_set=name)
        out["reciprocity"] = _number(measures.reciprocity(graph, edge_set=name))
        pairs = [("out", "in")] if es.undirected else [("out", "in"), ("in", "in"),
                                                      ("out", "out"), ("in", "out")]
        out["assortativity"] = {"degree" if es.undirected else f"{x}-{y}": _number(
            measures.degree_assortativity(graph, x, y, edge_set=name)) for x, y in pairs}
    if args.diameter:
        out["diameter"] = measures.diameter(graph, exact=args.diameter == "exact",
                                            edge_set=name).to_dict()
    return out


def _number(value: float) -> float | None:
    """None for NaN (undefined: no edges, or degrees that do not vary), as JSON has none."""
    return None if math.isnan(value) else value


def _text(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


def _lines(label: str, m: dict) -> list[str]:
    """The text lines of the measures of ``label`` (``edge set NAME``, or the default view);
    distributions binned by powers of 2."""
    lines = [f"  measures of {label}:"]
    for s in m.get("degrees", ()):
        pct = ", ".join(f"p{k} {v:g}" for k, v in s["percentiles"].items())
        which = {"both": "degree", "out": "out-degree", "in": "in-degree"}[s["direction"]]
        lines.append(f"    {which}: min {s['min']}, max {s['max']}, mean "
                     f"{s['mean']:.4g}, median {s['median']:g}, std {s['std']:.4g}, {pct}; "
                     f"{s['isolated']:,} of degree 0, {s['self_loops']:,} self-loops")
        bins: dict[str, int] = {}
        for degree, count in s["distribution"]:
            lo = 0 if degree == 0 else 1 << (int(degree).bit_length() - 1)
            key = str(lo) if lo < 2 else f"{lo}-{2 * lo - 1}"
            bins[key] = bins.get(key, 0) + count
        lines.append("      nodes by degree: " + ", ".join(f"{k}: {v:,}"
                                                          for k, v in bins.items()))
    if "density" in m:
        assort = ", ".join(f"{k} {_text(v)}" for k, v in m["assortativity"].items())
        lines.append(f"    density {m['density']:.4g}, reciprocity {_text(m['reciprocity'])}, "
                     f"assortativity {assort}")
    if "diameter" in m:
        d = m["diameter"]
        kind = "exact" if d["exact"] else f"estimate, at most {d['upper']}"
        lines.append(f"    diameter {d['diameter']} hops ({kind}; {d['searches']} searches, "
                     f"{d['components']:,} components; between {d['endpoints'][0]} and "
                     f"{d['endpoints'][1]})")
    return lines
