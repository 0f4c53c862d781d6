"""DeviceWorkCounter: launches, transfers and host synchronisations of known code, on the
CPU (the device emulated) and across a real second device (meta)."""

from __future__ import annotations

import torch

from graphsys.analysis.device_counts import DeviceWorkCounter


def test_launches_skip_views_and_allocations():
    x = torch.arange(12)
    with DeviceWorkCounter(device_tensors=[x]) as c:
        y = x.view(3, 4)[1:].t().unsqueeze(0).expand(2, 4, 2)   # views: no kernel
        torch.empty(5)
        z = (y * 3).sum() + x.cumsum(0)[-1]                     # mul, sum, cumsum, add
    assert c.launches == 4 and dict(c.ops) == {"mul": 1, "sum": 1, "cumsum": 1, "add": 1}
    assert c.transfers == 0 and c.syncs == 0 and int(z) == 3 * (4 + 5 + 6 + 7 + 8 + 9 +
                                                                10 + 11) * 2 + 66


def test_data_dependent_sizes_are_syncs():
    x = torch.arange(10)
    with DeviceWorkCounter(device_tensors=[x]) as c:
        x.nonzero()
        x[x > 4]
        torch.unique(x)
        torch.repeat_interleave(x, x)
        torch.repeat_interleave(x, x, output_size=45)        # size given: no sync
    assert c.syncs == 4, c.sync_reasons


def test_host_reads_of_device_values_only():
    host = torch.arange(6)
    with DeviceWorkCounter() as c:
        host.tolist()                           # a host tensor: no sync, no transfer
        host[1:3].numpy()
        int(host[0])
        dev = host.to("cpu", copy=True)         # addressed to a device: an upload
        made = torch.arange(3, device="cpu")    # a factory naming the device
        dev.cpu().numpy()                       # one read (the copy back is host data)
        made.tolist()
        bool((dev > 2).any())
    assert c.records == [("h2d", 48), ("d2h", 48), ("d2h", 24), ("d2h", 1)]
    assert c.syncs == 3 and c.sync_reasons["scalar read"] == 1


def test_a_numpy_view_through_dlpack_is_a_host_read():
    """``host_array`` (``np.from_dlpack``) of a device tensor reads it on the host (on
    CUDA it cannot be made without a copy); it went uncounted, no operator being run."""
    from graphsys.device import host_array

    host, dev = torch.arange(6), torch.arange(4)
    with DeviceWorkCounter(device_tensors=[dev]) as c:
        host_array(host)                        # a host tensor: not counted
        assert host_array(dev).tolist() == [0, 1, 2, 3]
    assert c.records == [("d2h", 32)] and dict(c.sync_reasons) == {"host read (__dlpack__)": 1}


def test_a_real_second_device_counts_crossings():
    x = torch.ones(4)
    tolist = torch.Tensor.tolist
    with DeviceWorkCounter(device="meta") as c:
        m = x.to("meta")                        # crosses: h2d
        (m * 2).sum()
        x.to(torch.float64)                     # a dtype conversion on the host: a kernel
    assert c.records == [("h2d", 16)] and c.launches == 3 and c.syncs == 0
    with DeviceWorkCounter():
        pass
    assert torch.Tensor.tolist is tolist            # the host reads unwrapped again


def test_host_only_operators_are_not_launches():
    """On a host-only run an operator on host tensors only (a gather into a host staging
    buffer, an optimiser's CPU step counter) runs on the host of a GPU run too."""
    host, dev = torch.arange(8), torch.arange(8)
    with DeviceWorkCounter(device_tensors=[dev]) as c:
        staged = host.index_select(0, torch.tensor([1, 3]))     # host: no launch
        staged.to("cpu", copy=True) + dev[:2]                   # upload, then one launch
    assert c.launches == 1 and dict(c.ops) == {"add": 1}
    assert c.host_ops["index_select"] == 1 and c.transfers == 1


def test_a_concatenation_of_mixed_dtypes_copies_each_piece():
    """CUDA concatenates pieces of one dtype in one kernel and copies pieces of mixed
    dtypes one by one (a kernel or a device-to-device memcpy each)."""
    a, b = torch.arange(4), torch.arange(3, dtype=torch.int32)
    with DeviceWorkCounter(device_tensors=[a, b]) as c:
        torch.cat([a, a[::2], a])                                  # one dtype: one
        torch.cat([a, b, torch.empty(0, dtype=torch.bool), a])     # mixed: 3 pieces
        torch.stack([a[0], b[0].long()])                           # a conversion, one
    assert c.launches == 6 and dict(c.ops) == {"cat": 4, "_to_copy": 1, "stack": 1}


def test_a_copy_into_a_device_buffer_is_a_transfer():
    """On a host-only run ``buffer.copy_(host)`` into a tensor on the emulated device is
    an upload (as a CUDA graph's input buffer is filled), and back a download; a copy
    between two device tensors is a launch."""
    host, buf, other = torch.arange(6), torch.zeros(6, dtype=torch.int64), torch.ones(6)
    with DeviceWorkCounter(device_tensors=[buf, other]) as c:
        buf.copy_(host)
        host.copy_(buf)
        other.copy_(buf)
    assert c.records == [("h2d", 48), ("d2h", 48)] and c.launches == 1
