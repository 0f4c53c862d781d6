"""Damaged PyTorch-BigGraph checkpoints: seeded byte flips in the HDF5 files are refused in
one line naming the file, or imported exactly as an independent reading of the damaged bytes
says (the float32 values at each dataset's offset, written afresh by h5py and imported);
never an h5py traceback, never NaN rows."""

from __future__ import annotations

import re
import shutil
from collections import Counter

import numpy as np
import pytest

from graphsys.embed.interop.pbg_checkpoint import import_pbg_checkpoint
from graphsys.embed.interop.pbg_files import pbg_row_adagrad
from graphsys.errors import FormatError

from .test_pbg import (
    DIM,
    DYN_NAMES,
    _split_names,
    default_sums,
    pbg_config,
    row_adagrad_blob,
    write_pbg,
)

h5py = pytest.importorskip("h5py")

#: Damaged copies tried (seeded): enough to meet every outcome, seconds in all.
TRIALS = 48


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A two-partition dynamic-relations checkpoint, its arrays, and where each float32
    dataset's values lie in its file (offset, shape)."""
    root = tmp_path_factory.mktemp("pbg-fuzz")
    rng = np.random.default_rng(1)
    names = _split_names(0)
    embs = [rng.normal(0, 0.5, (len(p), DIM)).astype(np.float32) for p in names]
    params = {f"relations/0/operator/{side}/{k}":
              rng.normal(1, 0.5, (len(DYN_NAMES), DIM // 2)).astype(np.float32)
              for side in ("lhs", "rhs") for k in ("imag", "real")}
    cfg = pbg_config(entities={"all": {"num_partitions": 2, "featurized": False}})
    sums = [default_sums(e) for e in embs]
    ckpt, data = write_pbg(root / "pbg", cfg, {"all": names}, {"all": embs}, params,
                           dynamic_names=DYN_NAMES, sums={"all": sums})
    layout = {}
    for f in sorted(ckpt.glob("*.h5")):
        with h5py.File(f) as hf:
            def visit(name, obj, f=f):
                if isinstance(obj, h5py.Dataset) and obj.dtype == np.float32:
                    layout[(f.name, name)] = (obj.id.get_offset(), obj.shape)
            hf.visititems(visit)
    return {"ckpt": ckpt, "data": data, "cfg": cfg, "names": names, "sums": sums,
            "params": list(params), "layout": layout}


def _arrays(out) -> dict[str, np.ndarray]:
    """The imported checkpoint's embeddings and relation parameters by name (the version
    suffix dropped: a damaged epoch attribute is the file's own say)."""
    return {re.sub(r"\.v\d+", "", str(p.relative_to(out))): np.load(p)
            for p in sorted(out.rglob("*.npy"))
            if "adagrad" not in p.name and "optim" not in p.parts}


def _values(layout, contents: dict[str, bytes]) -> dict[tuple[str, str], np.ndarray]:
    """What the bytes of each file say at each float32 dataset's offset, read without
    h5py."""
    return {(f, ds): np.frombuffer(contents[f], "<f4", int(np.prod(shape)), offset)
            .reshape(shape) for (f, ds), (offset, shape) in layout.items()}


def _reference(clean, values, root, kg) -> dict[str, np.ndarray]:
    """The import of a checkpoint written afresh with ``values`` (dataset -> array)."""
    embs = [values[(f"embeddings_all_{q}.v2.h5", "embeddings")] for q in range(2)]
    params = {k: values[("model.v2.h5", f"model/{k}")] for k in clean["params"]}
    ckpt, data = write_pbg(root, clean["cfg"], {"all": clean["names"]}, {"all": embs},
                           params, dynamic_names=DYN_NAMES, sums={"all": clean["sums"]})
    import_pbg_checkpoint(ckpt, data, kg, root / "gs")
    return _arrays(root / "gs")


def test_byte_flips_are_refused_in_one_line_or_imported_exactly(clean, kg1, tmp_path):
    files = sorted({f for f, _ in clean["layout"]})
    originals = {f: (clean["ckpt"] / f).read_bytes() for f in files}
    intact = _values(clean["layout"], originals)
    baseline = None
    seen = Counter()
    for trial in range(TRIALS):
        rng = np.random.default_rng(trial)
        work = tmp_path / f"t{trial}"
        shutil.copytree(clean["ckpt"], work / "ckpt")
        name = files[int(rng.integers(len(files)))]
        damaged = bytearray(originals[name])
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(len(damaged)))
            damaged[at] ^= 1 << int(rng.integers(8))
        (work / "ckpt" / name).write_bytes(bytes(damaged))
        values = _values(clean["layout"], {**originals, name: bytes(damaged)})
        try:
            import_pbg_checkpoint(work / "ckpt", clean["data"], kg1, work / "gs")
        except FormatError as exc:
            msg = str(exc)
            assert "\n" not in msg and msg.startswith(str(work / "ckpt" / name)), msg
            seen["refused"] += 1
            continue
        finite = all(np.isfinite(v).all() for v in values.values())
        assert finite, f"trial {trial}: a non-finite value of {name} was imported"
        got = _arrays(work / "gs")
        if all(np.array_equal(values[k], intact[k]) for k in values):  # every value intact
            if baseline is None:
                import_pbg_checkpoint(clean["ckpt"], clean["data"], kg1, tmp_path / "clean")
                baseline = _arrays(tmp_path / "clean")
            want = baseline
            seen["imported (values intact)"] += 1
        else:
            want = _reference(clean, values, tmp_path / f"ref{trial}", kg1)
            seen["imported (values changed)"] += 1
        assert got.keys() == want.keys()
        for k in got:
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"trial {trial}: {k}")
        shutil.rmtree(work)
    # every outcome is met by these seeds
    assert seen["refused"] and seen["imported (values intact)"], seen
    assert seen["imported (values changed)"], seen


def test_non_finite_embeddings_and_parameters_are_refused(clean, kg1, tmp_path):
    for name, ds in (("embeddings_all_1.v2.h5", "embeddings"),
                     ("model.v2.h5", "model/relations/0/operator/rhs/real")):
        work = tmp_path / name
        shutil.copytree(clean["ckpt"], work)
        with h5py.File(work / name, "r+") as hf:
            hf[ds][1, 2] = np.nan
        with pytest.raises(FormatError, match=rf"^{re.escape(str(work / name))}: {ds} holds "
                                              rf"a non-finite value \(nan at flat position "
                                              rf"\d+\)"):
            import_pbg_checkpoint(work, clean["data"], kg1, tmp_path / f"{name}.gs")
        assert not (tmp_path / f"{name}.gs").exists()


def test_a_tensor_in_another_float_layout_is_refused(clean, kg1, tmp_path):
    """A damaged datatype message can describe the same bytes as another float layout (a
    moved mantissa, another exponent bias, float64), which HDF5 converts without a word:
    PBG writes IEEE float32, so anything else is refused."""
    layout = h5py.h5t.IEEE_F32LE.copy()
    layout.set_ebias(111)
    for name, ds, dtype in (("model.v2.h5", "model/relations/0/operator/rhs/imag", "<f8"),
                            ("embeddings_all_0.v2.h5", "embeddings", layout)):
        work = tmp_path / name
        shutil.copytree(clean["ckpt"], work)
        with h5py.File(work / name, "r+") as hf:
            values = hf[ds][...]
            del hf[ds]
            if isinstance(dtype, str):
                hf.create_dataset(ds, data=values.astype(dtype))
            else:
                space = h5py.h5s.create_simple(values.shape)
                h5py.h5d.create(hf.id, ds.encode(), dtype, space)
        with pytest.raises(FormatError, match=rf"^{re.escape(str(work / name))}: {ds} is not "
                                              rf"an IEEE float32 dataset"):
            import_pbg_checkpoint(work, clean["data"], kg1, tmp_path / f"{name}.gs")


def test_a_damaged_optimizer_archive_restarts_its_sums():
    """An archive zipfile cannot open (here: a 'version needed' it does not know, which
    made zipfile raise NotImplementedError) restarts that partition's sums, with the
    reason."""
    blob = bytearray(row_adagrad_blob(np.ones(4, np.float32)))
    at = blob.index(b"PK\x01\x02") + 6  # the central directory's 'version needed'
    blob[at:at + 2] = (64).to_bytes(2, "little")
    sums, why = pbg_row_adagrad(bytes(blob), 4)
    assert sums is None and why.startswith("optimizer state ")
    sums, why = pbg_row_adagrad(row_adagrad_blob(np.arange(4, dtype=np.float32)), 4)
    assert why == "" and sums.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("rel, how, says", [
    ("data/dynamic_rel_count.txt", "fifo", r"not a regular file \(a FIFO\)"),
    ("data/entity_names_all_0.json", "dev-zero", "resolves outside"),
    ("data/entity_names_all_1.json", "symlink-out", "resolves outside"),
    ("ckpt/checkpoint_version.txt", "symlink-out", "resolves outside"),
    ("ckpt/model.v2.h5", "symlink-out", "resolves outside"),
    ("data/dynamic_rel_count.txt", "large", "more than the 4,096 such a file may hold"),
])
def test_hostile_pbg_files_are_refused_unread(clean, kg1, tmp_path, rel, how, says):
    """The PBG entity files and the checkpoint's files were read with plain reads: a FIFO
    blocked the import for ever, /dev/zero was read without end, a symlink out of the
    directory was followed, a count file was read whatever its size. They follow the
    project's file rules now (regular files inside their directory, sizes first)."""
    import os

    src = clean["ckpt"].parent
    work = shutil.copytree(src, tmp_path / "pbg", symlinks=True)
    target = work / rel
    raw = target.read_bytes()
    target.unlink()
    if how == "fifo":
        os.mkfifo(target)
    elif how == "dev-zero":
        target.symlink_to("/dev/zero")
    elif how == "symlink-out":
        (tmp_path / "outside").write_bytes(raw)
        target.symlink_to(tmp_path / "outside")
    else:
        target.write_bytes(raw + b" " * 5000)
    with pytest.raises(FormatError, match=says) as exc:
        import_pbg_checkpoint(work / "ckpt", work / "data", kg1, tmp_path / "out")
    assert "\n" not in str(exc.value)
