"""Fixtures of the embedding tests: a tiny planted KG (numpy only), one torch thread."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

SHIFTS = (1, 3, 7, 11)


def planted_triples(num_entities: int = 200, relations: int = 4, num_triples: int = 3000,
                    seed: int = 0) -> list[tuple[int, int, int]]:
    """Entities in clusters of 4 on a ring; relation r maps cluster c to c + SHIFTS[r]."""
    rng = np.random.default_rng(seed)
    clusters = num_entities // 4
    out: set[tuple[int, int, int]] = set()
    while len(out) < num_triples:
        h, r = int(rng.integers(num_entities)), int(rng.integers(relations))
        tc = (h // 4 + SHIFTS[r]) % clusters
        out.add((h, r, int(tc * 4 + rng.integers(4))))
    triples = sorted(out)
    rng.shuffle(triples)
    return triples


def build_kg(root: Path, partitions: int, *, num_entities: int = 200, num_triples: int = 3000,
             seed: int = 0) -> Path:
    """Ingest train (90%) / test (10%) edge sets of the planted KG into ``root/kg{P}``."""
    triples = planted_triples(num_entities, num_triples=num_triples, seed=seed)
    k = len(triples) // 10
    root.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, part in (("test", triples[:k]), ("train", triples[k:])):
        files[name] = root / f"{name}.tsv"
        files[name].write_text("".join(f"e{h}\tr{r}\te{t}\n" for h, r, t in part))
    out = root / f"kg{partitions}"
    if not out.exists():
        ingest_sources([EdgeSource([files[s]], edge_set=s, src_col=0, rel_col=1, dst_col=2)
                        for s in ("train", "test")], out, IngestOptions(partitions=partitions))
    return out


SMALL = ["dimension=32", "operator=\"complex_diagonal\"", "comparator=\"dot\"",
         "loss_fn=\"softmax\"", "lr=0.1", "batch_size=100", "num_uniform_negs=50",
         "num_batch_negs=10"]




@pytest.fixture(autouse=True)
def _one_thread():
    """Tests run on shared 2-core machines: one intra-op thread avoids oversubscription."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="session")
def kg_root(tmp_path_factory):
    return tmp_path_factory.mktemp("kg")


@pytest.fixture(scope="session")
def kg1(kg_root):
    return build_kg(kg_root, 1)


@pytest.fixture(scope="session")
def kg4(kg_root):
    return build_kg(kg_root, 4)


@pytest.fixture(scope="session")
def trained_ckpt(kg4, tmp_path_factory, session_device):
    """A checkpoint of a small ComplEx / dot / softmax model (d = 16, 3 epochs) on ``kg4``,
    trained on the test device (evaluation and serving read it on the CPU); read it only
    (copy it to build indexes in it)."""
    from graphsys.embed import load_config, train

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("ck") / "ck"
    train(kg4, load_config(None, ["dimension=16", "operator=\"complex_diagonal\"",
                             "comparator=\"dot\"", "loss_fn=\"softmax\"", "lr=0.1",
                             "num_epochs=3", "batch_size=100",
                             f"device=\"{session_device}\""]), out=out)
    torch.set_num_threads(old)
    return out


@pytest.fixture
def small(request):
    """``--set`` overrides of a small ComplEx / softmax model that fits the planted KG; in a
    test marked ``device``, training on the test device."""
    if request.node.get_closest_marker("device") is None:
        return list(SMALL)
    return SMALL + [f"device=\"{request.getfixturevalue('device')}\""]
