"""Exports of trained embeddings: PyTorch-BigGraph's TSV, Parquet and NumPy files.

:class:`EmbeddingExports` holds the export methods of :class:`~graphsys.embed.Embeddings`
(``export_tsv``, ``export_parquet``, ``export_numpy``), mixed into it.
Every file is written under a temp name and renamed when complete (missing parent
directories are created), so it appears whole or not at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa

from graphsys.embed.relations import PBG_DYNAMIC_NAME, pbg_side
from graphsys.errors import GraphsysError
from graphsys.outputs import check_outputs
from graphsys.storage.atomic import atomic_path

#: Entity rows formatted per step of export_tsv() (one progress update each).
TSV_ROWS = 1 << 14


class EmbeddingExports:
    """The export methods of :class:`~graphsys.embed.Embeddings`.

    A mixin: the host class provides the lookups (``partitions``, ``to_numpy``,
    ``original``, ``graph``, ``entity_types``, ``dimension``, ``_etype``, ``_offsets``)
    and the model (``relations``, ``relmodel``), as :class:`~graphsys.embed.Embeddings`
    does.
    """

    def export_tsv(self, entities_out: str | Path, relations_out: str | Path | None = None,
                   *, progress: Callable[[int], object] | None = None) -> None:
        """Write the embeddings as PyTorch-BigGraph's ``export_to_tsv`` does.

        ``entities_out`` gets ``id<TAB>v1<TAB>...`` per entity (all types), values
        ``%.9f``. ``relations_out`` gets
        ``relation<TAB>side<TAB>operator<TAB>param<TAB>shape<TAB>values...`` per relation
        parameter, written as PBG writes a dynamic-relations model: side ``lhs`` holds the
        operator PBG applies to heads to rank tails (graphsys's ``rhs`` one), ``rhs`` the
        one applied to tails, parameters carry PBG's dynamic names (``real``, ``imag``,
        ``diagonals``, ``translations``, ``linear_transformations``), rows side by side,
        then parameter by parameter, then relation by relation.

        Parameters
        ----------
        entities_out : str or Path
            The entities' TSV file.
        relations_out : str or Path, optional
            The relation parameters' TSV file (default: not written).
        progress : callable, optional
            ``progress(n)`` is called after every ``n`` entity rows written.

        Raises
        ------
        GraphsysError
            A file that cannot be written (no space, no permission), an id holding a tab,
            newline or carriage return (TSV has no escape for them: export to Parquet), both
            paths naming one file, or a path inside a graph or checkpoint directory.

        Notes
        -----
        Missing parent directories are created; each file appears whole or not at all.

        Examples
        --------
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
        >>> out = tempfile.mkdtemp()
        >>> emb.export_tsv(out + "/entities.tsv", out + "/relations.tsv")
        >>> row = open(out + "/entities.tsv").readline().split()
        >>> len(row)
        9
        >>> open(out + "/relations.tsv").readline().split()[:5]
        ['r0', 'lhs', 'complex_diagonal', 'real', '4']

        References
        ----------
        .. [1] A. Lerer et al., "PyTorch-BigGraph: A Large-scale Graph Embedding System",
           SysML 2019.
        """
        # the same path twice kept only the relations: the entities were lost
        check_outputs([("entities_out", entities_out, "file"),
                       ("relations_out", relations_out, "file")], overwrite=True)
        with _export_file(entities_out) as tmp, open(tmp, "w") as f:
            for t in self.entity_types:
                offs = self._offsets[t]
                for p, part in enumerate(self.partitions(t)):
                    for start in range(offs[p], offs[p + 1], TSV_ROWS):
                        stop = min(start + TSV_ROWS, int(offs[p + 1]))
                        names = self.original(np.arange(start, stop), t)
                        _tsv_safe(names, entities_out)
                        rows = np.asarray(part[start - offs[p]:stop - offs[p]])
                        f.writelines(f"{name}\t" + "\t".join(f"{x:.9f}" for x in row) + "\n"
                                     for name, row in zip(names, rows))
                        if progress is not None:
                            progress(stop - start)
        if relations_out is None:
            return
        with _export_file(relations_out) as tmp, open(tmp, "w") as f:
            for side in ("rhs", "lhs"):  # PBG's lhs side first
                params = [self.relmodel.relation_params(r)[side]
                          for r in range(len(self.relations))]
                for name in dict.fromkeys(k for ps in params for k in ps):
                    for rel, ps in zip(self.relations, params):
                        if name not in ps:
                            continue
                        arr = ps[name]
                        shape = "x".join(str(n) for n in arr.shape)
                        f.write(f"{rel['name']}\t{pbg_side(side)}\t{rel['operator']}\t"
                                f"{PBG_DYNAMIC_NAME[name]}\t{shape}\t"
                                + "\t".join(f"{x:.9f}" for x in arr.ravel()) + "\n")

    def export_parquet(self, out: str | Path, entity_type: str | None = None) -> None:
        """Write one entity type's embeddings to a Parquet file.

        Parameters
        ----------
        out : str or Path
            The Parquet file, with columns ``id`` (original ids) and ``embedding``
            (fixed-size list<float32>[d]); missing parent directories are created and the
            file appears whole or not at all.
        entity_type : str, optional
            The entity type; may be left out when there is only one.

        Examples
        --------
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
        >>> import pyarrow.parquet as pq
        >>> path = tempfile.mkdtemp() + "/emb.parquet"
        >>> emb.export_parquet(path)
        >>> table = pq.read_table(path)
        >>> table.column_names, table.num_rows, table.schema.field("embedding").type.list_size
        (['id', 'embedding'], 36, 8)
        """
        import pyarrow.parquet as pq

        t = self._etype(entity_type)
        ids = self.graph.node_ids(t)
        table = pa.table({"id": ids, "embedding": pa.FixedSizeListArray.from_arrays(
            pa.array(self.to_numpy(t).ravel(), pa.float32()), self.dimension)})
        with _export_file(out) as tmp:
            pq.write_table(table, tmp)

    def export_numpy(self, out_dir: str | Path, entity_type: str | None = None) -> list[Path]:
        """Write one entity type's embeddings and ids as two ``.npy`` files.

        Parameters
        ----------
        out_dir : str or Path
            The directory (created if missing) that gets ``{type}.npy``, float32
            ``(N, d)``, and ``{type}.ids.npy``, the original ids (int64, or fixed-width
            unicode for string ids), rows in the same order; no pickle.
        entity_type : str, optional
            The entity type; may be left out when there is only one.

        Returns
        -------
        list of Path
            The two files written.

        Examples
        --------
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
        >>> import numpy as np
        >>> vectors, ids = emb.export_numpy(tempfile.mkdtemp())
        >>> vectors.name, ids.name
        ('node.npy', 'node.ids.npy')
        >>> np.load(vectors).shape, np.load(ids).shape
        ((36, 8), (36,))
        """
        t = self._etype(entity_type)
        ids = self.graph.node_ids(t)
        ids = ids if isinstance(ids, np.ndarray) else np.array(ids.to_pylist(), dtype=str)
        paths = [Path(out_dir) / f"{t}.npy", Path(out_dir) / f"{t}.ids.npy"]
        for path, arr in zip(paths, (self.to_numpy(t), ids)):
            with _export_file(path) as tmp, open(tmp, "wb") as f:
                np.save(f, np.ascontiguousarray(arr), allow_pickle=False)
        return paths


@contextmanager
def _export_file(path: str | Path) -> Iterator[Path]:
    """A temp path that becomes ``path`` on success (:func:`atomic_path`), after creating
    its parent directories; an ``OSError`` (no space, no permission) becomes a one-line
    :class:`GraphsysError` naming ``path``."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, overwrite=True) as tmp:
            yield tmp
    except OSError as exc:
        raise GraphsysError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _tsv_safe(names, path) -> None:
    """Refuse ids that a TSV row cannot hold: a tab, newline or carriage return would split
    the row into the wrong number of fields."""
    for name in names:
        text = str(name)
        if "\t" in text or "\n" in text or "\r" in text:
            raise GraphsysError(f"{path}: id {text!r} holds a tab or line break, which a TSV "
                                f"row cannot hold; export to Parquet instead")
