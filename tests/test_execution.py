"""graphsys.execution: one frozen options object, each field checked in one place with a
one-line error; :meth:`Execution.of` takes it or a front-end's keywords, never both; the one
docstring template."""

from __future__ import annotations

import dataclasses

import pytest

from graphsys import Execution
from graphsys.errors import ParameterError
from graphsys.execution import fill_doc


def test_defaults_and_frozen():
    run = Execution()
    assert (run.mode, run.device, run.backend, run.threads, run.memory_limit,
            run.distributed, run.progress) == ("auto", "cpu", "auto", None, None, False, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.threads = 2
    assert Execution(device="cuda:1", threads=2, memory_limit=1 << 20).device == "cuda:1"
    assert Execution(progress=None).progress is False
    assert Execution(progress=print).progress is print


@pytest.mark.parametrize("field, value", [
    ("mode", "disk"), ("device", "tpu"), ("device", "cuda:x"), ("backend", "cupy"),
    ("threads", 0), ("threads", True), ("threads", 1.5), ("memory_limit", -1),
    ("memory_limit", "1GB"), ("distributed", 1), ("progress", 3), ("progress", "yes")])
def test_every_field_is_checked_in_one_line(field, value):
    with pytest.raises(ParameterError, match=f"^{field} ") as err:
        Execution(**{field: value})
    assert "\n" not in str(err.value) and err.value.parameter == field


def test_of_takes_the_object_or_the_keywords_not_both():
    run = Execution(mode="memory", threads=2)
    assert Execution.of(run, mode="auto", threads=None, progress=None) is run
    assert Execution.of(None, mode="memory", threads=2) == run
    with pytest.raises(ParameterError, match="execution given with threads"):
        Execution.of(run, threads=4)
    with pytest.raises(ParameterError, match="must be an Execution, got dict"):
        Execution.of({"mode": "memory"})


def test_on_cpu_refuses_a_gpu_run():
    assert Execution(device="auto").on_cpu("mining").device == "auto"
    with pytest.raises(ParameterError, match="mining runs on the CPU"):
        Execution(device="cuda").on_cpu("mining")
    with pytest.raises(ParameterError, match="mining runs on the CPU"):
        Execution(backend="torch").on_cpu("mining")


def test_fill_doc_indents_each_section_like_its_line():
    @fill_doc(opts="a : int\n    The a.\n\nb : int")
    def f():
        """Doc.

        Parameters
        ----------
        %(opts)s
        %(other)s
        """

    assert f.__doc__.splitlines()[4:8] == ["        a : int", "            The a.", "",
                                           "        b : int"]
    assert "%(other)s" in f.__doc__  # a name it was not given is left alone
