"""``graphsys generate``: write a synthetic graph (R-MAT, road-like grid, SBM, knowledge graph).

Kinds:
  rmat  directed power-law edges (R-MAT, a,b,c = 0.57,0.19,0.19); --edges defaults to 16 x N
  grid  road-like weighted grid, undirected pairs once; --edges defaults to 80% of the lattice
  sbm   stochastic block model, undirected pairs once; also writes STEM.nodes.parquet (labels,
        features, train/val/test masks); --edges defaults to 5 x N
  kg    knowledge graph (head, rel, tail) with planted relations; --nodes counts entities;
        --edges (triples) defaults to min(10 x N, planted facts); --splits writes
        STEM.train/.valid/.test files

The format follows --out: .tsv, .tsv.gz, .csv, .csv.gz (no header), .parquet, .arrow, .feather.
Text columns are src dst [weight], or head rel tail for kg; Parquet/Arrow name them src, dst,
rel, weight. Counts accept suffixes: 10M = 10,000,000, 4Mi = 4,194,304, 1e6.

To ingest: grid and sbm with --undirected (each pair is written once); kg with --rel-col rel
(Parquet/Arrow) or --rel-col 1 --dst-col 2 (text); sbm node table with --nodes STEM.nodes.parquet.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tqdm import tqdm

from graphsys.commands._common import emit_json, show_progress
from graphsys.errors import GraphsysError, check_real
from graphsys.generators import (
    edge_schema,
    grid_edges,
    knowledge_graph,
    rmat_edges,
    sbm,
    split_paths,
    write_edges,
    write_nodes,
    write_split_edges,
)
from graphsys.generators._validate import check_int, check_seed
from graphsys.generators.grid import default_grid_edges
from graphsys.generators.kg import check_fractions
from graphsys.generators.rmat import RNG_BLOCK_EDGES, check_rmat_params
from graphsys.generators.writer import check_writable, node_table_path, output_format
from graphsys.outputs import check_output, check_outputs
from graphsys.progress import progress_bar
from graphsys.units import parse_count

KINDS = ("rmat", "grid", "sbm", "kg")
#: Rows per chunk handed to the writer: one R-MAT RNG block. Smaller than the library's 4M
#: default so generation (background thread) and encoding overlap: the writer encodes one
#: block while the generator draws the next.
CLI_CHUNK_EDGES = RNG_BLOCK_EDGES
DEFAULT_DROP = "0.2"


def register(subparsers) -> None:
    p = subparsers.add_parser("generate", help="write a synthetic graph (rmat, grid, sbm, kg)",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=KINDS, help="generator")
    p.add_argument("--nodes", required=True, metavar="N", help="nodes (entities for kg)")
    p.add_argument("--edges", metavar="M", help="edges (triples for kg); default per kind")
    p.add_argument("--seed", default="0", metavar="S", help="random seed (default 0)")
    p.add_argument("--out", required=True, type=Path, metavar="FILE",
                   help="output file; the extension picks the format")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    groups = {}
    g = groups["rmat"] = p.add_argument_group("rmat")
    g.add_argument("--abc", default="0.57,0.19,0.19", metavar="A,B,C",
                   help="quadrant probabilities, a + b + c <= 1 (default 0.57,0.19,0.19)")
    g.add_argument("--no-permute", action="store_true",
                   help="keep raw R-MAT ids (hubs at low ids)")
    g = groups["grid"] = p.add_argument_group("grid")
    g.add_argument("--weight-range", default="1,10", metavar="LOW,HIGH",
                   help="lattice edge lengths, uniform in [LOW, HIGH) (default 1,10)")
    g.add_argument("--drop", default=DEFAULT_DROP, metavar="F",
                   help="lattice fraction removed when --edges is omitted (default 0.2)")
    g = groups["sbm"] = p.add_argument_group("sbm")
    g.add_argument("--blocks", default="4", metavar="K", help="blocks = classes (default 4)")
    g.add_argument("--ratio", default="10", metavar="R", help="p_in / p_out (default 10)")
    g.add_argument("--features", default="16", metavar="D",
                   help="node feature width, 0 for none (default 16)")
    g.add_argument("--feature-noise", default="2", metavar="SIGMA",
                   help="noise around the class means (default 2)")
    g = groups["kg"] = p.add_argument_group("kg")
    g.add_argument("--relations", default="10", metavar="R", help="relations (default 10)")
    g.add_argument("--cluster-size", default="4", metavar="S",
                   help="entities per cluster = planted tails per (head, rel) (default 4)")
    g.add_argument("--splits", metavar="TRAIN,VALID,TEST",
                   help="write train/valid/test files in these fractions, e.g. 0.9,0.05,0.05")
    p.add_argument("--chunk-edges", default=str(CLI_CHUNK_EDGES), metavar="ROWS",
                   help=argparse.SUPPRESS)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON line of results")
    # each kind's options (flag, dest, default): another kind refuses them when set
    p.set_defaults(func=run, kind_options={
        kind: [(a.option_strings[0], a.dest, a.default) for a in g._group_actions]
        for kind, g in groups.items()})


def run(args) -> int:
    nodes = check_int(parse_count(args.nodes, "--nodes"), "--nodes")
    edges = None if args.edges is None else check_int(parse_count(args.edges, "--edges"),
                                                      "--edges")
    seed = check_seed(parse_count(args.seed, "--seed"), "--seed")
    chunk = check_int(parse_count(args.chunk_edges, "--chunk-edges"), "--chunk-edges")
    for kind, options in args.kind_options.items():
        for flag, dest, default in options if kind != args.kind else ():
            if getattr(args, dest) != default:
                raise GraphsysError(f"{flag} is an option of {kind}, not of {args.kind}")
    if args.kind == "grid" and edges is not None and args.drop != DEFAULT_DROP:
        raise GraphsysError("--drop and --edges both set the lattice's edges: give one")
    try:
        output_format(args.out)
    except GraphsysError as exc:
        raise GraphsysError(f"--out: {exc}") from None
    started = time.perf_counter()
    # the generators' ParameterErrors name num_nodes, drop, ...: graphsys.cli shows the flags
    summary = _GENERATORS[args.kind](args, nodes, edges, seed, chunk)
    seconds = time.perf_counter() - started
    summary = {"kind": args.kind, **summary, "seed": seed, "seconds": round(seconds, 3),
               "edges_per_second": round(summary["edges"] / seconds) if seconds > 0 else None}
    if args.json:
        emit_json(summary)
    else:
        files = ", ".join(summary["files"])
        print(f"wrote {summary['edges']:,} {'triples' if args.kind == 'kg' else 'edges'} over "
              f"{nodes:,} nodes to {files} in {seconds:.2f} s "
              f"({summary['edges'] / max(seconds, 1e-9) / 1e6:.2f} M/s)")
    return 0


def _floats(text: str, option: str, count: int) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in str(text).split(","))
    except ValueError:
        values = ()
    if len(values) != count:
        raise GraphsysError(f"{option} must be {count} comma-separated numbers, got {text!r}")
    return values


def _number(text: str, option: str, **bounds) -> float:
    try:
        value = float(text)
    except ValueError:
        raise GraphsysError(f"{option} must be a number, got {text!r}") from None
    return check_real(option, value, **bounds)


def _outputs_free(paths: list[Path], overwrite: bool) -> None:
    """Check every output up front, so nothing is written when one of them is taken (or
    two of them are one file)."""
    check_outputs([("--out" if k == 0 else f"output {path}", path, "file")
                   for k, path in enumerate(paths) if not path.is_dir()], overwrite=overwrite)
    for path in paths:
        if not path.is_dir():  # a directory is refused by check_writable below
            check_output(path, overwrite=overwrite, name="out")
        try:
            check_writable(path, overwrite=overwrite)
        except GraphsysError as exc:
            raise GraphsysError(f"--out: {exc}") from None


def _bar(args, total: int, unit: str) -> tqdm:
    return progress_bar(total=total, unit=unit, unit_scale=True, dynamic_ncols=True,
                disable=not show_progress(args), desc=f"generate {args.kind}")


def _rmat(args, nodes: int, edges: int | None, seed: int, chunk: int) -> dict:
    abc = _floats(args.abc, "--abc", 3)
    try:
        a, b, c, _ = check_rmat_params(*abc)
    except GraphsysError as exc:
        raise GraphsysError(f"--abc: {exc}") from None
    edges = 16 * nodes if edges is None else edges
    stream = rmat_edges(nodes, edges, seed=seed, a=a, b=b, c=c,
                        permute=not args.no_permute, chunk_edges=chunk)
    _outputs_free([args.out], args.overwrite)
    with _bar(args, edges, "edge") as bar:
        written = write_edges(stream, args.out, overwrite=args.overwrite, progress=bar.update)
    return {"files": [str(args.out)], "nodes": nodes, "edges": written}


def _grid(args, nodes: int, edges: int | None, seed: int, chunk: int) -> dict:
    low, high = _floats(args.weight_range, "--weight-range", 2)
    drop = _number(args.drop, "--drop", low=0, high=1, high_open=True)
    stream = grid_edges(nodes, edges, seed=seed, weight_range=(low, high), drop=drop,
                        chunk_edges=chunk)
    total = default_grid_edges(nodes, drop) if edges is None else edges
    _outputs_free([args.out], args.overwrite)
    with _bar(args, total, "edge") as bar:
        written = write_edges(stream, args.out, overwrite=args.overwrite, progress=bar.update)
    return {"files": [str(args.out)], "nodes": nodes, "edges": written}


def _sbm(args, nodes: int, edges: int | None, seed: int, chunk: int) -> dict:
    model = sbm(nodes, 5 * nodes if edges is None else edges,
                blocks=parse_count(args.blocks, "--blocks"),
                ratio=_number(args.ratio, "--ratio", low=0),
                features=parse_count(args.features, "--features"),
                feature_noise=_number(args.feature_noise, "--feature-noise", low=0),
                seed=seed)
    node_path = node_table_path(args.out)
    _outputs_free([args.out, node_path], args.overwrite)
    with _bar(args, model.num_edges + nodes, "row") as bar:
        written = write_edges(model.edges(chunk), args.out, overwrite=args.overwrite,
                              progress=bar.update)
        write_nodes(model.nodes(), node_path, features=model.features,
                    overwrite=args.overwrite, progress=bar.update)
    return {"files": [str(args.out), str(node_path)], "nodes": nodes, "edges": written,
            "blocks": model.blocks, "intra_fraction": round(model.intra_fraction, 6),
            "p_in": model.p_in, "p_out": model.p_out,
            "split_sizes": dict(zip(("train", "val", "test"),
                                    model.split_sizes.sum(axis=0).tolist()))}


def _kg(args, nodes: int, edges: int | None, seed: int, chunk: int) -> dict:
    relations = parse_count(args.relations, "--relations")
    cluster_size = parse_count(args.cluster_size, "--cluster-size")
    model = knowledge_graph(nodes, edges, relations=relations, cluster_size=cluster_size,
                            seed=seed)
    edges = model.num_triples
    summary = {"nodes": nodes, "relations": relations, "clusters": model.num_clusters}
    if args.splits is None:
        _outputs_free([args.out], args.overwrite)
        with _bar(args, edges, "triple") as bar:
            written = write_edges(model.triples(chunk), args.out, rel_names=model.relation_names,
                                  overwrite=args.overwrite, progress=bar.update)
        return {"files": [str(args.out)], **summary, "edges": written}
    try:
        fractions = check_fractions(_floats(args.splits, "--splits", 3), "--splits")
    except GraphsysError as exc:
        raise GraphsysError(str(exc) if str(exc).startswith("--splits") else
                            f"--splits: {exc}") from None
    paths = split_paths(args.out)
    _outputs_free(list(paths.values()), args.overwrite)
    with _bar(args, edges, "triple") as bar:
        rows = write_split_edges(model.split(fractions), paths,
                                 edge_schema(args.out, rel=True), rel_names=model.relation_names,
                                 overwrite=args.overwrite, progress=bar.update)
    return {"files": [str(p) for p in paths.values()], **summary, "edges": sum(rows.values()),
            "splits": rows}


_GENERATORS = {"rmat": _rmat, "grid": _grid, "sbm": _sbm, "kg": _kg}
