#!/usr/bin/env python3
"""Kiln's CUDA engines against PyTorch on the GPU machine, measured side by side in one run.

For each model (torchvision / transformers with seeded random weights, exported there to ONNX) and
each precision (fp16; tf32 = fp32 with TF32) and batch (1 and large): PyTorch eager, eager + CUDA
graph and torch.compile(mode="reduce-overhead", inductor freezing on so BatchNorm and constants fold
as Kiln folds them), CNNs in channels_last; then `kiln build --backend cuda` and `kiln profile
--no-data-transfers --cuda-graph` (GPU compute per batch, median). Kiln's outputs are checked against
PyTorch's fp32 outputs on the same input (relative L2; fp16 must stay within 1e-2), beside the same
measure for PyTorch's own run in the row's precision ("torch rel-L2"): the error the model itself has
in fp16 or TF32, the yardstick for Kiln's.

Quantized rows (int8, fp8): `kiln build --fp16 --int8|--fp8 --calib-data` with calibration inputs
drawn like the measured ones (another seed); int4: `kiln build --fp16 --int4-weights` (weight-only,
no calibration; e.g. GPT-2 INT4 weight-only at batch 1: --models gpt2_s128 --precisions fp16,int4
--batches 1); int8f / fp8f: the int8 / fp8 builds with --quantize-where-faster. Each against PyTorch's fp16 peers (measured once for the fp16 and quantized rows of a
model) and Kiln's own fp16 row where the run has one ("Kiln fp16 X ms: Nx", above 1 means the
quantized engine is faster). A quantized row's rel-L2 includes its quantization error.

  python3 scripts/gpu/benchmark_gpu.py --kiln BUNDLE/bin/kiln [--models resnet50,bert_base_s128]
      [--precisions fp16,tf32,int8,fp8,int4,int8f,fp8f] [--batches 1,large] [--modes eager,cudagraph,compile] [--out DIR]
      [--opt-level 0-5] [--jobs N] [--wait-for FILE] [--keep-timing-caches]

With --jobs N the untimed work (exports, PyTorch's reference outputs, torch.compile) runs for N
(model, batch) pairs at once, each in its own process, and the timing follows one pair at a time on an
otherwise idle GPU. The whole table (24 rows) in one call of a 10-minute device command: a first
run builds every plan (its timing caches stay in /tmp/kiln-bench-work while the machine is held), then
the same command with --keep-timing-caches measures every row with warm builds; both runs' build
times go in the table (cold from the first).

Prints one table row per (model, precision, batch) with Kiln's and the best peer's latency and
throughput and their ratio (peer ms / Kiln ms: above 1 means Kiln is faster), and writes every
measurement as JSON under --out.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision

CNN = {"resnet50", "mobilenet_v3_large", "efficientnet_b0"}
WORK = "/tmp/kiln-bench-work"  # ONNX exports, plans, inputs


def with_batchnorm_statistics(m):
    """Random weights leave BatchNorm's running statistics at mean 0, variance 1, and MobileNetV3's and
    EfficientNet's activations then shrink layer by layer to ~1e-13 at the output: below fp16's
    smallest value, so any fp16 engine outputs zeros. A trained model's statistics normalise each
    layer; three batches of the benchmark's input distribution in train mode give it that."""
    for bn in m.modules():
        if isinstance(bn, torch.nn.modules.batchnorm._BatchNorm):
            bn.reset_running_stats()
            bn.momentum = None  # a cumulative average over the batches
    m.train()
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(8, 3, 224, 224, generator=g))
    return m.eval()


def make_model(name):
    torch.manual_seed(0)
    if name in CNN:
        return with_batchnorm_statistics(getattr(torchvision.models, name)())
    if name == "vit_b_16":
        # torchvision zero-initialises ViT's head: outputs would be all zero and check nothing.
        m = torchvision.models.vit_b_16()
        torch.nn.init.normal_(m.heads.head.weight, std=0.02)
        return m
    from transformers import BertConfig, BertModel, GPT2Config, GPT2Model
    if name == "bert_base_s128":
        return BertModel(BertConfig())
    if name == "gpt2_s128":
        return GPT2Model(GPT2Config())
    raise SystemExit(f"benchmark_gpu.py: unknown model {name}")


# int8f / fp8f: the same builds with --quantize-where-faster (each layer quantized only where faster).
WHERE_FASTER = {"int8f": "int8", "fp8f": "fp8"}
QUANTIZED = {"int8", "fp8", "int4", *WHERE_FASTER}  # compared with the fp16 peers and Kiln's fp16 row
CALIBRATED = {"int8", "fp8", *WHERE_FASTER}  # int4 is weight-only: no calibration data


def make_inputs(name, batch, seed=1):
    g = torch.Generator().manual_seed(seed)
    if name.endswith("_s128"):
        return {"input_ids": torch.randint(0, 30000, (batch, 128), generator=g)}
    return {"x": torch.randn(batch, 3, 224, 224, generator=g)}


class LastHidden(torch.nn.Module):
    """Transformers models return a dict; export and time the last hidden state only."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).last_hidden_state


def wrapped(name):
    m = make_model(name).eval()
    return LastHidden(m).eval() if name.endswith("_s128") else m


def time_cuda(fn, iters=100, warmup=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def on_gpu(name, inputs, precision):
    """The model and its inputs on the GPU as the peers run them: fp16 or fp32, CNNs channels_last."""
    m = wrapped(name).cuda()
    x = [t.cuda() for t in inputs.values()]
    if precision == "fp16":
        m = m.half()
        x = [t.half() if t.is_floating_point() else t for t in x]
    if name in CNN:
        m = m.to(memory_format=torch.channels_last)
        x = [t.to(memory_format=torch.channels_last) for t in x]
    return m, x


def peer_flags():
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True


def compiled_peer(name, inputs, precision):
    """torch.compile(reduce-overhead, freezing) of the model, compiled and warmed: the slow part of the
    compile peer, done in the run's untimed first phase."""
    import torch._inductor.config as inductor
    peer_flags()
    inductor.freezing = True
    m, x = on_gpu(name, inputs, precision)
    with torch.inference_mode():
        compiled = torch.compile(m, mode="reduce-overhead")
        for _ in range(3):
            compiled(*x)
    torch.cuda.synchronize()
    return compiled, x


def peer(name, batch, precision, mode, inputs, compiled=None):
    """The peer's median GPU time per batch; `compiled` is compiled_peer's result for mode compile."""
    peer_flags()
    if mode == "compile":
        fn, x = compiled if compiled else compiled_peer(name, inputs, precision)
        with torch.inference_mode():
            return time_cuda(lambda: fn(*x))
    m, x = on_gpu(name, inputs, precision)
    with torch.inference_mode():
        if mode == "eager":
            fn = lambda: m(*x)
        else:
            m(*x)
            torch.cuda.synchronize()
            graph, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    m(*x)
            torch.cuda.current_stream().wait_stream(side)
            with torch.cuda.graph(graph):
                m(*x)
            fn = graph.replay
        ms = time_cuda(fn)
    del m
    torch.cuda.empty_cache()
    return ms


def reference_outputs(name, inputs):
    """PyTorch fp32 (no TF32) outputs, the yardstick for Kiln's accuracy."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    m = wrapped(name).cuda()
    with torch.inference_mode():
        y = m(*[t.cuda() for t in inputs.values()])
    return y.float().cpu().numpy()


def peer_outputs(name, inputs, precision):
    """PyTorch's outputs in the row's precision (fp16, or fp32 with TF32), as the peers compute them."""
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    m, x = on_gpu(name, inputs, precision)
    with torch.inference_mode():
        y = m(*x)
    return y.float().cpu().numpy()


def export(name, batch, inputs, path):
    # Not under inference_mode/no_grad: nn.MultiheadAttention's fast path (ViT) has no ONNX export.
    torch.onnx.export(wrapped(name), tuple(inputs.values()), path, input_names=list(inputs), output_names=["y"],
                      opset_version=17, dynamo=False)
    print_attention_nodes(name, path)


def print_attention_nodes(name, path):
    """The nodes around the model's first Softmax (how the exporter wrote attention), for the log."""
    try:
        import onnx
        nodes = onnx.load(path, load_external_data=False).graph.node
    except Exception as e:  # onnx missing: nothing to show
        print(f"# {name}: cannot list its nodes ({type(e).__name__})", flush=True)
        return
    at = next((i for i, n in enumerate(nodes) if n.op_type == "Softmax"), None)
    if at is None:
        return
    for n in nodes[max(0, at - 14):at + 4]:
        print(f"#   {name}: {n.op_type}({', '.join(n.input)}) -> {', '.join(n.output)}", flush=True)


def run(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        start = time.time()
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
        f.write(f"# rc={rc} in {time.time() - start:.1f}s\n")
    return rc


def kiln(args, name, batch, precision, inputs, onnx_path, work):
    tag = f"{name}_{precision}_b{batch}"
    plan, profile, outdir = (os.path.join(work, tag + s) for s in (".plan", ".profile.json", "_out"))
    log = os.path.join(args.out, tag + ".log")
    cache = os.path.join(work, tag + ".timing-cache")
    warm_cache = args.keep_timing_caches and os.path.exists(cache)
    if os.path.exists(cache) and not warm_cache:
        os.remove(cache)
    build = [args.kiln, "build", onnx_path, "--backend", "cuda", "--save", plan, "--timing-cache", cache,
             "--opt-level", str(args.opt_level), "--export-report", os.path.join(args.out, tag + ".report.json")]
    if precision in ("fp16", *QUANTIZED):
        build.append("--fp16")
    if precision == "int4":
        build.append("--int4-weights")
    if precision in CALIBRATED:  # calibrated on inputs like the measured ones, another seed
        calib = os.path.join(work, f"{name}_b{batch}_calibration.npy")
        if not os.path.exists(calib):
            np.save(calib, next(iter(make_inputs(name, batch, seed=2).values())).numpy())
        build += ["--" + WHERE_FASTER.get(precision, precision), "--calib-data", calib]
        if precision in WHERE_FASTER:
            build.append("--quantize-where-faster")
    start = time.time()
    if run(build, log):
        return {"error": "build failed (see " + log + ")"}
    build_s = time.time() - start
    warm_s = None
    if warm_cache:  # an earlier run's timing cache: this build was the warm one
        build_s, warm_s = None, build_s
    elif name == "resnet50":  # the build-time target: the same build again with the timing cache warm
        start = time.time()
        if run(build, log) == 0:
            warm_s = time.time() - start
    npys = []
    for key, value in inputs.items():
        path = os.path.join(work, f"{tag}_{key}.npy")
        np.save(path, value.numpy())
        npys += ["--input", f"{key}={path}"]
    if run([args.kiln, "profile", plan, *npys, "--no-data-transfers", "--cuda-graph", "--warmup", "500",
            "--iterations", "200", "--duration", "2", "--layer-runs", "0", "--export-profile", profile], log):
        # Engines that synchronise inside cannot be captured: measure them without a graph.
        if run([args.kiln, "profile", plan, *npys, "--no-data-transfers", "--warmup", "500", "--iterations",
                "200", "--duration", "2", "--layer-runs", "0", "--export-profile", profile], log):
            return {"error": "profile failed (see " + log + ")", "build_s": build_s}
    perf = json.load(open(profile))["performance"]
    # Per-layer GPU times (a separate profiled pass; each layer timed alone) into the row's log, and
    # their sum per layer type printed, so the run's output says where the time goes.
    run([args.kiln, "profile", plan, *npys, "--no-data-transfers", "--warmup", "0", "--iterations", "1",
         "--duration", "0", "--layer-runs", "10"], log)
    print_layer_types(tag, log)
    os.makedirs(outdir, exist_ok=True)
    run([args.kiln, "run", plan, *npys, "--output-dir", outdir], log)
    outs = sorted(glob.glob(os.path.join(outdir, "*.npy")))
    return {"build_s": build_s, "warm_build_s": warm_s, "ms": perf["compute"]["median_ms"] or perf["latency"]["median_ms"],
            "graph": perf.get("cuda_graph", None), "output": np.load(outs[0]) if outs else None}


def print_layer_types(tag, log):
    """Sums the last per-layer table in the log by layer type: count and milliseconds, largest first."""
    try:
        lines = open(log).read().splitlines()
    except OSError:
        return
    starts = [i for i, line in enumerate(lines) if line.startswith("per layer (median")]
    if not starts:
        return
    by_type = {}
    for line in lines[starts[-1] + 2:]:
        parts = line.split()
        if len(parts) < 5 or not line.startswith("  "):
            break
        try:  # name, type, precision, median ms, %, tactic (names have no spaces)
            ms = float(parts[3])
        except ValueError:
            break
        count, total = by_type.get(parts[1], (0, 0.0))
        by_type[parts[1]] = (count + 1, total + ms)
    top = sorted(by_type.items(), key=lambda kv: -kv[1][1])[:8]
    print(f"#   {tag} layers: " + ", ".join(f"{t} {n}x {ms:.3f}" for t, (n, ms) in top), flush=True)


def rel_l2(actual, expected):
    if actual is None or actual.shape != expected.shape:
        return float("nan")
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    return float(np.linalg.norm(a - e) / max(np.linalg.norm(e), 1e-30))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", required=True)
    p.add_argument("--models", default="resnet50,mobilenet_v3_large,efficientnet_b0,vit_b_16,bert_base_s128,gpt2_s128")
    p.add_argument("--precisions", default="fp16,tf32")
    p.add_argument("--batches", default="1,large")
    p.add_argument("--modes", default="eager,cudagraph,compile")
    p.add_argument("--out", default=os.environ.get("OUT", "/tmp/kiln-bench"))
    p.add_argument("--opt-level", type=int, default=3, help="kiln build --opt-level (5: the widest tactic search)")
    p.add_argument("--jobs", type=int, default=1,
                   help="(model, batch) pairs prepared at once: export, references, torch.compile. Timing is "
                        "always one row at a time, after every pair is prepared, on an otherwise idle GPU")
    p.add_argument("--wait-for", help="before the first timing, wait until this file exists (another job that "
                                      "shares the GPU in the untimed phase, e.g. tests, has ended)")
    p.add_argument("--prepare-timeout", type=float, default=900,
                   help="seconds the untimed phase (and the wait for --wait-for) may take")
    p.add_argument("--pair-timeout", type=float, default=600,
                   help="seconds one pair's timing (its peers, Kiln's builds and profiles) may take")
    p.add_argument("--keep-timing-caches", action="store_true",
                   help="build with the timing caches an earlier run on this machine left (warm builds: the "
                        "build column is then the warm time), so the whole table fits one lease's call; "
                        "by default each row's cache is deleted and its build is cold")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(WORK, exist_ok=True)
    print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    pairs = [(name, (32 if name.endswith("_s128") else 128) if b == "large" else int(b))
             for name in args.models.split(",") for b in args.batches.split(",")]
    rows = []
    for chunk in [pairs] if args.jobs > 1 else [[pair] for pair in pairs]:
        measure_pairs(args, chunk, rows)
    print("\n## Summary")
    for i, row in enumerate(rows):
        print_row(row, flush_header=i == 0)



def measure_pairs(args, pairs, rows):
    """Prepares every (model, batch) pair in its own process, --jobs at a time (the compile peers are
    minutes of CPU work each), then lets each process time its rows in turn: the timing phase has the
    GPU to itself, and every row's peers and Kiln are measured by the same process, back to back."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, (os.cpu_count() or 2) // max(1, args.jobs))))
    slots = ctx.BoundedSemaphore(max(1, args.jobs))
    workers = []
    for name, batch in pairs:
        ours, theirs = ctx.Pipe()
        proc = ctx.Process(target=pair_worker, args=(vars(args), name, batch, theirs, slots), daemon=True)
        proc.start()
        theirs.close()  # so that a process that dies reads as end of file here, not as silence
        workers.append((name, batch, proc, ours))
    deadline = time.time() + args.prepare_timeout
    ready = []
    for name, batch, proc, conn in workers:
        if conn.poll(max(1.0, deadline - time.time())) and conn.recv() == "ready":
            ready.append((name, batch, proc, conn))
        else:
            print(f"# {name} b{batch}: not prepared within {args.prepare_timeout:.0f} s (or failed): skipped", flush=True)
            proc.kill()
    if args.wait_for:
        while not os.path.exists(args.wait_for) and time.time() < deadline:
            time.sleep(1)
    for name, batch, proc, conn in ready:
        conn.send("go")
        try:
            if not conn.poll(args.pair_timeout):
                raise EOFError
            got = conn.recv()
        except EOFError:
            proc.kill()
            proc.join(timeout=30)
            print(f"# {name} b{batch}: its process ended without results (exit code {proc.exitcode})", flush=True)
            continue
        proc.join(timeout=30)
        for row in got:
            rows.append(row)
            print_row(row, flush_header=len(rows) == 1)
            with open(os.path.join(args.out, "benchmark_gpu.json"), "w") as f:
                json.dump(rows, f, indent=1)


def pair_worker(args, name, batch, conn, slots):
    """One (model, batch) pair: prepared while holding one of --jobs slots, then timed when told to."""
    args = argparse.Namespace(**args)
    with slots:
        try:
            prepared = prepare_pair(args, name, batch)
        except Exception as e:  # a model that does not export or compile is reported; the others still run
            print(f"# {name} b{batch}: preparation failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            conn.send("failed")
            return
    conn.send("ready")
    if conn.recv() == "go":
        conn.send(time_pair(args, name, batch, prepared))


def peer_precisions(args):
    return list(dict.fromkeys("fp16" if p in QUANTIZED else p for p in args.precisions.split(",")))


def prepare_pair(args, name, batch):
    """The untimed work: the ONNX export, PyTorch's fp32 reference outputs and its outputs in each
    row's precision, and the compile peers."""
    inputs = make_inputs(name, batch)
    onnx_path = os.path.join(WORK, f"{name}_b{batch}.onnx")
    if not os.path.exists(onnx_path):
        export(name, batch, inputs, onnx_path)
    prepared = {"inputs": inputs, "onnx": onnx_path, "expected": reference_outputs(name, inputs),
                "compiled": {}, "torch_rel_l2": {}}
    for precision in peer_precisions(args):
        try:
            prepared["torch_rel_l2"][precision] = rel_l2(peer_outputs(name, inputs, precision), prepared["expected"])
        except Exception as e:  # the yardstick is informative; a failure is reported, not fatal
            print(f"# {name} {precision} b{batch}: PyTorch {precision} outputs: {str(e)[:200]}", flush=True)
        if "compile" in args.modes.split(","):
            try:
                prepared["compiled"][precision] = compiled_peer(name, inputs, precision)
            except Exception as e:  # a peer that fails is reported, not fatal
                print(f"# {name} {precision} b{batch} compile: {type(e).__name__}: {str(e)[:200]}", flush=True)
    return prepared


def time_pair(args, name, batch, prepared):
    """The timed work of one pair: per precision the peers, then Kiln's build and profile."""
    inputs, expected = prepared["inputs"], prepared["expected"]
    rows, peers_of, kiln_fp16_ms = [], {}, None
    for precision in args.precisions.split(","):
        peer_precision = "fp16" if precision in QUANTIZED else precision
        if peer_precision not in peers_of:  # the fp16 and quantized rows of a pair share their peers
            peers_of[peer_precision] = {}
            for mode in args.modes.split(","):
                key = mode + ("+cl" if name in CNN else "")
                if mode == "compile" and peer_precision not in prepared["compiled"]:
                    peers_of[peer_precision][key] = None  # its failure was reported when preparing
                    continue
                try:
                    peers_of[peer_precision][key] = peer(name, batch, peer_precision, mode, inputs,
                                                         prepared["compiled"].get(peer_precision))
                except Exception as e:  # a peer that fails is reported, not fatal
                    peers_of[peer_precision][key] = None
                    print(f"# {name} {precision} b{batch} {mode}: {type(e).__name__}: {str(e)[:200]}", flush=True)
        row = {"model": name, "batch": batch, "precision": precision, "peers": dict(peers_of[peer_precision])}
        if peer_precision in prepared["torch_rel_l2"]:
            row["torch_rel_l2"] = prepared["torch_rel_l2"][peer_precision]
        k = kiln(args, name, batch, precision, inputs, prepared["onnx"], WORK)
        if precision == "fp16":
            kiln_fp16_ms = k.get("ms")
        if precision in QUANTIZED:
            row["kiln_fp16_ms"] = kiln_fp16_ms
        row["kiln_ms"] = k.get("ms")
        row["kiln_error"] = k.get("error")
        row["build_s"] = k.get("build_s")
        row["warm_build_s"] = k.get("warm_build_s")
        row["rel_l2"] = rel_l2(k.get("output"), expected) if "output" in k else float("nan")
        rows.append(row)
    return rows


def print_row(row, flush_header):
    if flush_header:
        print(f"{'model':20s} {'prec':5s} {'batch':>5s} {'kiln ms':>9s} {'kiln /s':>9s} {'best peer':>18s} "
              f"{'peer ms':>9s} {'peer/kiln':>9s} {'rel-L2':>9s} {'torch rel-L2':>12s} {'build s':>8s}")
    peers = {m: ms for m, ms in row["peers"].items() if ms}
    best = min(peers, key=peers.get) if peers else "-"
    kms, pms = row["kiln_ms"], peers.get(best)
    ratio = f"{pms / kms:9.2f}" if kms and pms else f"{'-':>9s}"
    kiln_text = f"{kms:9.3f} {row['batch'] * 1000 / kms:9.0f}" if kms else f"{'failed':>9s} {'-':>9s}"
    peer_text = f"{pms:9.3f}" if pms else f"{'-':>9s}"
    build = f"{row['build_s']:8.1f}" if row.get("build_s") else f"{'-':>8s}"
    if row.get("warm_build_s"):
        build += f" (warm {row['warm_build_s']:.1f})"
    versus_fp16 = ""
    if row.get("kiln_fp16_ms") and kms:
        versus_fp16 = f"  (Kiln fp16 {row['kiln_fp16_ms']:.3f} ms: {row['kiln_fp16_ms'] / kms:.2f}x)"
    print(f"{row['model']:20s} {row['precision']:5s} {row['batch']:5d} {kiln_text} {best:>18s} {peer_text} {ratio} "
          f"{row['rel_l2']:9.2e} {row.get('torch_rel_l2', float('nan')):12.2e} {build}" + (f"  ({row['kiln_error']})" if row.get("kiln_error") else "") +
          versus_fp16, flush=True)


if __name__ == "__main__":
    sys.exit(main())
