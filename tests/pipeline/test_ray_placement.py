"""``predict --engine ray`` checks its workers against the cluster's resources before any
work — a worker that no node can hold (GPUs on a cluster without any, more CPUs than a node has) or more workers
than the nodes hold at once is one line naming the option, never a run that prints nothing and never ends. Unit
tests of the check against resource dicts (the Ray end-to-end check is in test_ray_engine.py, slow)."""

from __future__ import annotations

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.pipeline.ray_cluster import check_placement, placement_capacity

LAPTOP = [{"CPU": 2.0, "memory": 8e9, "object_store_memory": 1e9}]
GPU_CLUSTER = [{"CPU": 16.0, "GPU": 2.0}, {"CPU": 8.0, "GPU": 1.0}, {"CPU": 4.0}]


@pytest.mark.parametrize(("nodes", "cpus", "gpus", "workers", "field", "message"), [
    (LAPTOP, 1.0, 1.0, None, "--gpus-per-worker", "the cluster has no GPU"),
    (LAPTOP, 4.0, 0.0, None, "--cpus-per-worker", "no node has 4 CPUs (the most on one node: 2)"),
    (GPU_CLUSTER, 1.0, 3.0, None, "--gpus-per-worker", "no node has 3 GPUs (the most on one node: 2)"),
    ([{"CPU": 16.0}, {"CPU": 4.0, "GPU": 1.0}], 8.0, 1.0, None, "--cpus-per-worker",
     "no node has 8 CPUs and 1 GPU together"),
    (LAPTOP, 1.0, 0.0, 3, "--workers", "the cluster holds at most 2 worker(s) of 1 CPU at once"),
    (GPU_CLUSTER, 1.0, 1.0, 4, "--workers", "at most 3 worker(s) of 1 CPU and 1 GPU"),
    ([], 1.0, 0.0, None, "--address", "the cluster has no live node"),
])
def test_what_cannot_be_placed_is_one_line_naming_the_option(nodes, cpus, gpus, workers, field, message) -> None:
    with pytest.raises(InputError) as info:
        check_placement(nodes, cpus=cpus, gpus=gpus, workers=workers)
    assert info.value.field == field and message in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("nodes", "cpus", "gpus", "workers", "capacity"), [
    (LAPTOP, 1.0, 0.0, 2, 2),
    (LAPTOP, 0.5, 0.0, None, 4),
    (GPU_CLUSTER, 1.0, 1.0, 3, 3),
    (GPU_CLUSTER, 2.0, 0.5, None, 6),  # 4 + 2 GPU halves; the CPU-only node holds none
    (GPU_CLUSTER, 0.0, 0.0, 50, None),  # reserves nothing: no limit
])
def test_what_fits_passes_and_counts_what_the_nodes_hold(nodes, cpus, gpus, workers, capacity) -> None:
    check_placement(nodes, cpus=cpus, gpus=gpus, workers=workers)
    assert placement_capacity(nodes, cpus=cpus, gpus=gpus) == capacity
