"""What FlagGems' kernels take from ``flag_gems.runtime`` and ``flag_gems.utils.libentry`` (ours).

Upstream (https://github.com/FlagOpen/FlagGems @ 532ff438c703, Apache-2.0) reads autotune configs from
src/flag_gems/runtime/backend/_nvidia/tune_configs.yaml and heuristics from
src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py through a runtime object that
detects the vendor with torch. A torch user migrating keeps the kernels' decorators and provides:

* ``get_tuned_config(name)``: the YAML entries the corpus uses, written out as ``triton.Config``
  (CHANGED: the YAML loader and its ``gen: true`` expansion are flag_gems machinery);
* ``get_heuristic_config(name)``: the heuristics below, copied from heuristics_config_utils.py
  (lines 122-180; the one line that asks torch for the SM count is CHANGED);
* ``libentry()``: FlagGems' launch cache around a JITFunction (it reads torch's current stream
  and device); CHANGED to a no-op: ``wrap_triton`` launches the JITFunction it wraps.
"""
# ruff: noqa

import triton

from .._host import current_sm_count


def libentry():
    return lambda fn: fn  # CHANGED: see the module docstring


def _gen(meta, warps, **lists):
    """Expand a ``gen: true`` YAML entry: every combination of the listed values."""
    import itertools
    names = list(lists)
    out = []
    for w in warps:
        for combo in itertools.product(*(lists[n] for n in names)) if names else [()]:
            m = dict(meta)
            m.update(zip(names, combo))
            out.append(triton.Config(m, num_warps=w))
    return out


_TUNED = {
    # tune_configs.yaml:113-125
    "log_softmax": lambda: [triton.Config({"BLOCK_M": 8, "BLOCK_N": 256}, num_warps=8),
                            triton.Config({"BLOCK_M": 16, "BLOCK_N": 512}, num_warps=8),
                            triton.Config({"BLOCK_M": 32, "BLOCK_N": 512}, num_warps=8)],
    # tune_configs.yaml:211-221
    "softmax_non_inner": lambda: [triton.Config({"TILE_K": k}) for k in (32, 64, 128, 256, 1024)],
    # tune_configs.yaml:222-232
    "softmax_inner": lambda: [triton.Config({"TILE_N": n}) for n in (32, 64, 128, 256, 1024)],
    # tune_configs.yaml:347-355
    "layer_norm_persistent": lambda: _gen({}, (4, 8, 16)),
    # tune_configs.yaml:356-370
    "layer_norm_loop": lambda: _gen({}, (4, 8, 16), TILE_N=(1024, 2048, 4096, 8192)),
    # tune_configs.yaml:371-386
    "layer_norm_backward": lambda: _gen({"BLOCK_COL_SIZE": 2048}, (4, 8, 16), BLOCK_ROW_SIZE=(1, 2, 4, 8)),
    # tune_configs.yaml:387-400
    "weight_bias_backward": lambda: _gen({"BLOCK_ROW_SIZE": 128}, (4, 8, 16), BLOCK_COL_SIZE=(1, 2)),
}


def get_tuned_config(name):
    return _TUNED[name]()


# --- src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py:122-180 ---
def softmax_heur_tile_k(args):
    MAX_TILE_K = 8192
    # CHANGED: was torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    NUM_SMS = current_sm_count()
    tile_k = 1
    upper_bound = min(args["K"], MAX_TILE_K)
    while tile_k <= upper_bound:
        num_blocks = args["M"] * triton.cdiv(args["K"], tile_k)
        num_waves = num_blocks / NUM_SMS
        if (num_waves > 1) and (tile_k * 2 <= upper_bound):
            tile_k *= 2
        else:
            break
    return tile_k


def softmax_heur_tile_n_non_inner(args):
    return triton.cdiv(8192, args["TILE_K"])


def softmax_heur_one_tile_per_cta(args):
    return args["TILE_N"] >= args["N"]


def softmax_heur_num_warps_non_inner(args):
    tile_size = args["TILE_N"] * args["TILE_K"]
    if tile_size < 2048:
        return 4
    elif tile_size < 4096:
        return 8
    else:
        return 16


def softmax_heur_tile_n_inner(args):
    if args["N"] <= (32 * 1024):
        return triton.next_power_of_2(args["N"])
    else:
        return 4096


def softmax_heur_num_warps_inner(args):
    tile_size = args["TILE_N"]
    if tile_size < 2048:
        return 4
    elif tile_size < 4096:
        return 8
    else:
        return 16


def softmax_heur_tile_n_bwd_non_inner(args):
    return max(1, 1024 // args["TILE_K"])


def softmax_heur_tile_m(args):
    return max(1, 1024 // args["TILE_N"])



# --- heuristics_config_utils.py:276-294 (the HEURISTICS_CONFIGS entries used) ---
_HEURISTICS = {
    "softmax_non_inner": {
        "TILE_K": softmax_heur_tile_k,
        "TILE_N": softmax_heur_tile_n_non_inner,
        "ONE_TILE_PER_CTA": softmax_heur_one_tile_per_cta,
        "num_warps": softmax_heur_num_warps_non_inner,
    },
    "softmax_inner": {
        "TILE_N": softmax_heur_tile_n_inner,
        "ONE_TILE_PER_CTA": softmax_heur_one_tile_per_cta,
        "num_warps": softmax_heur_num_warps_inner,
    },
    "softmax_backward_non_inner": {
        "TILE_N": softmax_heur_tile_n_bwd_non_inner,
        "ONE_TILE_PER_CTA": softmax_heur_one_tile_per_cta,
    },
    "softmax_backward_inner": {
        "TILE_M": softmax_heur_tile_m,
        "ONE_TILE_PER_CTA": softmax_heur_one_tile_per_cta,
    },
}


def get_heuristic_config(name):
    return _HEURISTICS[name]
