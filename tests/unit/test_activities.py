"""The activity table on stacks py-spy 0.4.3 dumped from the reference trainer on torch
2.13 (this machine, a compile cache under the workspace), trimmed to their innermost
frames: each is what its thread was doing, not what a frame's package suggests."""

from __future__ import annotations

from typing import Any

from tools.probes._activities import classify

SITE = "/venv/lib/python3.11/site-packages/"
CACHE = "/ws/compile_cache/yl/cylucyxe3i5bts3dyrzzsa7o2dbu2ztejqzhlltbzr7g76gk66dc.py"


def stack(*frames: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"name": name, "filename": path, "line": 1} for name, path in frames]


def test_a_compiled_graph_running_from_a_moved_cache_is_compiled_code() -> None:
    """Inductor's generated ``Runner.call`` under TORCHINDUCTOR_CACHE_DIR, called by
    CompiledFxGraph.__call__ (in the same package as the compiler): running, not
    compiling."""
    frames = stack(
        ("Runner.call", CACHE),
        ("CompiledFxGraph.__call__", SITE + "torch/_inductor/output_code.py"),
        ("runtime_wrapper", SITE + "torch/_functorch/_aot_autograd/runtime_wrappers.py"),
        ("DisableContext.__call__.<locals>._fn", SITE + "torch/_dynamo/eval_frame.py"),
        ("flex_drafter_sim_2", "/repo/examples/dflash_trainer/compilation.py"),
        (
            "_TorchDynamoContext.__call__.<locals>.compile_wrapper",
            SITE + "torch/_dynamo/eval_frame.py",
        ),
    )
    assert classify(frames, None, True) == "compiled_code"


def test_an_optimizer_step_under_dynamos_disable_is_not_compiled_code() -> None:
    """torch.optim's methods run under DisableContext (dynamo turned off): plain library
    code, not a compiled frame."""
    frames = stack(
        ("Optimizer.zero_grad", SITE + "torch/optim/optimizer.py"),
        ("DisableContext.__call__.<locals>._fn", SITE + "torch/_dynamo/eval_frame.py"),
        ("DrafterDevice.draft", "/repo/examples/dflash_trainer/devices.py"),
    )
    assert classify(frames, "self.zero_grad()", True) == "python"


def test_flex_attention_past_the_recompile_limit_is_its_eager_path() -> None:
    """flex_attention's math path under DisableContext, below a compiled frame: the thread runs
    attention eagerly, the fallback taken past the recompile limit, not compiling."""
    frames = stack(
        ("_math_attention_inner", SITE + "torch/_higher_order_ops/flex_attention.py"),
        ("math_attention", SITE + "torch/_higher_order_ops/flex_attention.py"),
        ("DisableContext.__call__.<locals>._fn", SITE + "torch/_dynamo/eval_frame.py"),
        ("flex_attention", SITE + "torch/nn/attention/flex_attention.py"),
        ("flex_target_sim_0", "/repo/examples/dflash_trainer/compilation.py"),
        (
            "_TorchDynamoContext.__call__.<locals>.compile_wrapper",
            SITE + "torch/_dynamo/eval_frame.py",
        ),
    )
    assert classify(frames, None, True) == "eager_attention"


def test_dynamo_converting_a_frame_is_compiling() -> None:
    """dynamo's InstructionTranslator converting a frame under ``_compile``: compiling, not running
    the model."""
    frames = stack(
        ("InstructionTranslator.run", SITE + "torch/_dynamo/symbolic_convert.py"),
        ("_compile", SITE + "torch/_dynamo/convert_frame.py"),
        (
            "_TorchDynamoContext.__call__.<locals>.compile_wrapper",
            SITE + "torch/_dynamo/eval_frame.py",
        ),
    )
    assert classify(frames, None, True) == "compiling"


def test_inductor_lowering_is_compiling() -> None:
    """Inductor lowering a graph (GraphLowering.run under compile_fx_inner): compiling too."""
    frames = stack(
        ("GraphLowering.run", SITE + "torch/_inductor/graph.py"),
        ("compile_fx_inner", SITE + "torch/_inductor/compile_fx.py"),
    )
    assert classify(frames, None, True) == "compiling"


def test_the_compiled_frame_itself_running_is_compiled_code() -> None:
    """dynamo's compile_wrapper innermost: the compiled bytecode runs below Python."""
    frames = stack(
        (
            "_TorchDynamoContext.__call__.<locals>.compile_wrapper",
            SITE + "torch/_dynamo/eval_frame.py",
        ),
        ("DeviceFlex.__call__", "/repo/examples/dflash_trainer/compilation.py"),
    )
    assert classify(frames, None, True) == "compiled_code"
