"""A short check of the accelerator paths: NCCL sync, NCCL subgroups, overlapped and rooted computes, device checks.

Run it where a GPU is lent, one process per GPU (one GPU is enough):

    torchrun --standalone --nproc-per-node 1 benchmarks/device_check.py --device cuda

The same bodies run on the CPU with gloo (how the test suite keeps this script working):

    torchrun --standalone --nproc-per-node 2 benchmarks/device_check.py --device cpu

Each rank folds an uneven shard of ``examples/torchrun_eval.py``'s data set, on
the device, into that example's metrics; rank 0 then checks, against the same
metrics computed in one process on the CPU:

* ``sync``: ``sm.compute`` over every rank (NCCL on CUDA), and its latency;
* ``subgroup``: ``sm.subgroup(task)`` (a split of the ranks; a new backend of the same kind);
* ``async``: ``sm.compute(tree, async_op=True).wait()`` (a second backend, the caller's stream);
* ``root``: ``sm.compute(tree, root=0)``;
* ``dcp``: the metrics as ``Stateful`` modules of an FSDP2 model (``fully_shard``), saved with
  ``torch.distributed.checkpoint`` and resumed into a fresh model (docs/distributed.md's three calls);
* ``host reads``: the tensor data a checked ``update`` reads on the host, by default and inside
  ``sm.device_checks()`` (0 expected there on an accelerator; CPU tensors keep their checks);
* ``bad batch``: on an accelerator, a child process feeds a label out of range inside
  ``sm.device_checks()``: it must fail (a device-side assert), and the line says whether the
  metric's message reached stderr.

It prints one line per check and ``PASS`` or ``FAIL``, and writes
``results/device_check.json`` (``--no-save`` to skip).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.overrides import TorchFunctionMode

import scopedmetrics as sm

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
HOST_READS = {"item", "tolist", "__bool__", "__int__", "__float__", "__index__", "nonzero", "unique", "numpy"}
BAD_BATCH = """
import torch, scopedmetrics as sm
m = sm.MulticlassAccuracy(4)
with sm.device_checks():
    m = m.update(torch.randn(8, 4, device="cuda"), torch.full((8,), 9, device="cuda"))
torch.cuda.synchronize()
print("accepted")
"""


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("torchrun_eval", ROOT / "examples" / "torchrun_eval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class HostReads(TorchFunctionMode):
    """Counts the torch calls that read tensor data on the host."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.count += getattr(func, "__name__", "") in HOST_READS
        return func(*args, **(kwargs or {}))


def host_reads(device: torch.device) -> dict[str, list[int]]:
    """Host reads of one checked update per metric: ``[default, inside sm.device_checks()]``."""
    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(32, 10, generator=g).to(device), torch.randint(0, 10, (32,), generator=g).to(device)
    scores, binary = torch.rand(32, generator=g).to(device), torch.randint(0, 2, (32,), generator=g).to(device)
    x, y = torch.randn(32, generator=g).to(device), torch.randn(32, generator=g).to(device)
    cases = {
        "MulticlassAccuracy": (sm.MulticlassAccuracy(10), (logits, labels)),
        "BinaryAUROC(thresholds=100)": (sm.BinaryAUROC(thresholds=100), (scores, binary)),
        "MeanSquaredError": (sm.MeanSquaredError(), (x, y)),
    }
    out = {}
    for name, (m, batch) in cases.items():
        m = m.to(device)
        counts = []
        for inside in (False, True):
            with sm.device_checks(inside), HostReads() as reads:
                m.update(*batch)
            counts.append(reads.count)
        out[name] = counts
    return out


def resumed(metrics: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """The values of ``metrics`` after a DCP round trip inside an FSDP2 model (rank 0 resumes the global state)."""
    import tempfile

    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from scopedmetrics.nn import Stateful, reduce_state_dict, resume_state_dict, size_state_dict

    mesh = init_device_mesh(device.type, (dist.get_world_size(),))

    def model(held: dict[str, Any]) -> torch.nn.Module:
        net = torch.nn.Module()
        net.lin = torch.nn.Linear(4, 4, device=device)
        net.metrics = torch.nn.ModuleDict({k: Stateful(m) for k, m in held.items()})
        fully_shard(net.lin, mesh=mesh)
        return fully_shard(net, mesh=mesh)

    where = [tempfile.mkdtemp(prefix="sm_dcp_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(where, src=0)  # one directory for every rank (one machine)
    net = model(metrics)
    state = get_model_state_dict(net)
    reduce_state_dict(net, state)
    dcp.save(state, checkpoint_id=where[0])
    fresh = model({k: m.reset() for k, m in metrics.items()})
    state = get_model_state_dict(fresh)
    size_state_dict(fresh, state, dcp.FileSystemReader(where[0]).read_metadata())
    dcp.load(state, checkpoint_id=where[0])
    resume_state_dict(fresh, state)
    set_model_state_dict(fresh, state)
    values = {k: s.compute() for k, s in fresh.metrics.items()}
    dist.barrier()
    if dist.get_rank() == 0:
        shutil.rmtree(where[0])
    return values


def bad_batch() -> dict[str, Any]:
    """A label out of range inside ``sm.device_checks()`` on CUDA, in a child process (the assert ends its context)."""
    done = subprocess.run([sys.executable, "-c", BAD_BATCH], capture_output=True, text=True, timeout=300)
    return {"returncode": done.returncode, "refused": done.returncode != 0 and "accepted" not in done.stdout,
            "message_seen": "MulticlassAccuracy.update" in done.stderr, "stderr_tail": done.stderr[-600:]}


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args.add_argument("--repeat", type=int, default=20, help="timed computes (median reported)")
    args.add_argument("--no-save", action="store_true")
    opts = args.parse_args()
    cuda = opts.device == "cuda"
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo", device_id=device if cuda else None)
    try:
        code = _run(_example(), device, opts)
        dist.barrier()  # leave together: a gloo rank whose peers tear their connections down first may abort
        return code
    finally:
        dist.destroy_process_group()


def _run(ex: Any, device: torch.device, opts: argparse.Namespace) -> int:
    rank, world = dist.get_rank(), dist.get_world_size()
    data = ex.make_data()
    lo, hi = ex.shard_bounds(rank, world)
    metrics = ex.evaluate({k: v.to(device) for k, v in data.items()}, lo, hi)
    sync = sm.compute(metrics)
    elapsed = []
    for _ in range(opts.repeat):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        sm.compute(metrics)
        elapsed.append(time.perf_counter() - start)
    with sm.use_reducer(sm.subgroup(ex.task_of(rank))):
        per_task = sm.compute(metrics)
    overlapped = sm.compute(metrics, async_op=True).wait(timeout=120)
    rooted = sm.compute(metrics, root=0)
    found = {"sync": ex.flat(sync), "subgroup": ex.flat(per_task), "async": ex.flat(overlapped),
             "root": ex.flat(rooted), "dcp": ex.flat(resumed(metrics, device)), "reads": host_reads(device)}
    reports: list[Any] = [None] * world
    dist.all_gather_object(reports, (ex.task_of(rank), found))
    if rank != 0:
        return 0
    every = list(range(world))
    truth = ex.one_process(data, every, world)
    checks: dict[str, bool] = {}
    for scope in ("sync", "async", "root", "dcp"):
        checks[scope] = all(all(ex.same(r[1][scope][k], truth[k]) for k in truth) for r in reports)
    checks["subgroup"] = True
    for task, f in reports:
        members = [i for i, (t, _) in enumerate(reports) if t == task]
        group_truth = ex.one_process(data, members, world)
        checks["subgroup"] &= all(ex.same(f["subgroup"][k], group_truth[k]) for k in group_truth)
    reads = found["reads"]
    checks["host reads"] = all(inside == 0 for _, inside in reads.values()) if device.type != "cpu" else True
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "backend": dist.get_backend(), "world": world, "torch": torch.__version__,
        "compute_ms_median": 1e3 * statistics.median(elapsed), "host_reads": reads,
    }
    if device.type == "cuda":
        result["bad_batch"] = bad = bad_batch()
        checks["bad batch"] = bad["refused"]
    result["checks"] = checks
    print(f"{world} rank(s), {result['backend']} on {result['device']}, torch {result['torch']}")
    for name, ok in checks.items():
        print(f"{name:>10}: {'ok' if ok else 'FAILED'}")
    print(f"compute of the example's metrics: {result['compute_ms_median']:.2f} ms (median of {opts.repeat})")
    print("host reads of one checked update [default, in device_checks()]:", reads)
    if "bad_batch" in result:
        print("bad batch in device_checks():", {k: v for k, v in result["bad_batch"].items() if k != "stderr_tail"})
    if not opts.no_save:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "device_check.json").write_text(json.dumps(result, indent=2) + "\n")
    passed = all(checks.values())
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
