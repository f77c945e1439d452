#!/usr/bin/env python3
"""The tensor-parallel split on the real Hugging Face exports, where torch and transformers are (the
GPU machine): BERT-base and GPT-2 small at seq 128, exported exactly as benchmark_gpu.py exports them
(random weights, opset 17, the legacy exporter), built for the CPU backend whole and with
`--tensor-parallel N`, run on the same token ids (`kiln run` and `kiln run --ranks N`), and the ranks'
output compared with the whole plan's: relative L2 and largest difference (fp32 sums in another
order: expect ~1e-6). Uses no GPU.

  python3 scripts/gpu/check_tensor_parallel.py --kiln BUNDLE/bin/kiln [--models bert_base_s128,gpt2_s128]
      [--ranks 2,4] [--opt-level 3] [--out DIR]
"""
import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchmark_gpu as bench  # noqa: E402  (make_inputs, export: the benchmark's own export)


def kiln(args, cmd):
    print("$ " + " ".join(cmd), flush=True)
    result = subprocess.run([args.kiln] + cmd, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout + result.stderr, flush=True)
    return result.returncode == 0


def check(args, name):
    work = os.path.join(args.out, name)
    os.makedirs(work, exist_ok=True)
    inputs = bench.make_inputs(name, 1)
    model = os.path.join(work, name + ".onnx")
    bench.export(name, 1, inputs, model)
    ids = os.path.join(work, "input_ids.npy")
    np.save(ids, inputs["input_ids"].numpy())
    whole = os.path.join(work, "whole.plan")
    if not (kiln(args, ["build", model, "--save", whole, "--opt-level", str(args.opt_level)]) and
            kiln(args, ["run", whole, "--input", "input_ids=" + ids, "--output-dir", os.path.join(work, "whole")])):
        return False
    want = np.load(os.path.join(work, "whole", "y.npy")).astype(np.float64)
    ok = True
    for n in args.ranks:
        plan = os.path.join(work, f"tp{n}.plan")
        out = os.path.join(work, f"tp{n}")
        if not (kiln(args, ["build", model, "--save", plan, "--tensor-parallel", str(n), "--opt-level",
                            str(args.opt_level)]) and
                kiln(args, ["run", plan, "--ranks", str(n), "--input", "input_ids=" + ids, "--output-dir", out])):
            print(f"{name} over {n} ranks: FAILED (see above)", flush=True)
            ok = False
            continue
        got = np.load(os.path.join(out, "y.npy")).astype(np.float64)
        rel = np.linalg.norm(got - want) / np.linalg.norm(want)
        print(f"{name} over {n} ranks: rel-L2 {rel:.2e}, max |diff| {np.abs(got - want).max():.2e}", flush=True)
        ok = ok and rel < 1e-5
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", required=True)
    p.add_argument("--models", default="bert_base_s128,gpt2_s128")
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--opt-level", type=int, default=3)
    p.add_argument("--out", default="/tmp/kiln-tensor-parallel")
    args = p.parse_args()
    args.ranks = [int(n) for n in args.ranks.split(",")]
    results = [check(args, name) for name in args.models.split(",")]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
