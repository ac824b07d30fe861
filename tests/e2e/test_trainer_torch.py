"""In-process checks of the trainer's torch parts: masks, both attention paths, the
compile gate, checkpoints, and the torch 2.13 behaviours the failure families rest on."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
import warnings
from pathlib import Path

import pytest

from tests.lib.need import need
from tests.lib.torch_error_texts import FX_ERROR

HAVE_TORCH = importlib.util.find_spec("torch") is not None
if HAVE_TORCH:
    with warnings.catch_warnings():
        # The CPU wheel warns at import when NumPy is absent; nothing here needs NumPy.
        warnings.filterwarnings("ignore", "Failed to initialize NumPy", UserWarning)
        import torch
        import torch.fx._symbolic_trace as symbolic_trace
        from torch.nn.attention.flex_attention import flex_attention

        from examples.dflash_trainer import checkpoint, faults, masks
        from examples.dflash_trainer.compilation import CompileGate
        from examples.dflash_trainer.config import ModelConfig, TrainConfig
        from examples.dflash_trainer.models import Drafter

pytestmark = [
    pytest.mark.torch,
    # Uncompiled flex_attention is the reference the compiled path is checked against;
    # torch warns that it is slow, which is the point of it here.
    pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile:UserWarning"),
    # torch.compile's first use imports torch.utils.mkldnn, which still uses this.
    pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"),
]


@pytest.fixture(autouse=True)
def _torch_present() -> None:
    need(HAVE_TORCH, "torch", "install the [torch] extra: pip install -e '.[torch]'")


def test_drafter_mask_is_causal_over_context_and_bidirectional_in_block() -> None:
    """Query 17 (block 1, anchor 16) sees context 0..16 and every noised token of block 1."""
    dense = masks.MaskCache(torch.device("cpu")).drafter_dense(32)[0, 0]
    row = dense[17]
    assert row[:32].nonzero().flatten().tolist() == list(range(17))
    assert row[32:].nonzero().flatten().tolist() == list(range(16, 32))
    assert dense[3, :32].nonzero().flatten().tolist() == [0]


@pytest.mark.parametrize("length", [32, 48])
def test_flex_and_dense_paths_agree(length: int) -> None:
    """flex_attention with the BlockMask equals SDPA with the dense mask from the same mask_mod."""
    cache = masks.MaskCache(torch.device("cpu"))
    torch.manual_seed(0)
    q = torch.randn(2, 4, length, 16)
    kv = torch.randn(2, 4, 2 * length, 16)
    flex = flex_attention(q, kv, kv, block_mask=cache.drafter(length))
    dense = torch.nn.functional.scaled_dot_product_attention(
        q, kv, kv, attn_mask=cache.drafter_dense(length)
    )
    torch.testing.assert_close(flex, dense, atol=1e-5, rtol=1e-5)


def test_drafter_trains_through_dense_and_drafts_through_flex_identically() -> None:
    """The drafter's logits do not depend on which of the two attention paths ran."""
    cfg = ModelConfig()
    torch.manual_seed(0)
    model = Drafter(cfg)
    cache = masks.MaskCache(torch.device("cpu"))
    tokens = torch.randint(0, cfg.vocab, (2, 32))
    hidden = torch.randn(2, 32, cfg.dim * cfg.target_layers)
    bm, dense = cache.drafter(32), cache.drafter_dense(32)
    with torch.no_grad():
        a = model(tokens, hidden, lambda q, k, v: flex_attention(q, k, v, block_mask=bm))
        b = model(
            tokens,
            hidden,
            lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=dense
            ),
        )
    torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_compile_gate_keeps_calls_out_while_compiling() -> None:
    """A compilation waits for running calls, and new calls wait for a waiting compilation."""
    gate, order = CompileGate(), []
    reader_in, release = threading.Event(), threading.Event()

    def reader() -> None:
        with gate.shared():
            reader_in.set()
            release.wait(5)
            order.append("call-1 done")

    def writer() -> None:
        with gate.exclusive():
            order.append("compile")

    def late_reader() -> None:
        with gate.shared():
            order.append("call-2")

    threads = [threading.Thread(target=reader)]
    threads[0].start()
    reader_in.wait(5)
    threads.append(threading.Thread(target=writer))
    threads[1].start()
    time.sleep(0.1)
    threads.append(threading.Thread(target=late_reader))
    threads[2].start()
    time.sleep(0.1)
    assert order == []
    release.set()
    for t in threads:
        t.join(5)
    assert order == ["call-1 done", "compile", "call-2"]


def _double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def test_late_monkeypatch_of_fx_check_does_not_reach_existing_wrapper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The incident's patch: the module function now says False, the wrapper still raises."""
    compiled = torch.compile(_double)
    monkeypatch.setattr(
        symbolic_trace, "is_fx_symbolic_tracing", symbolic_trace.is_fx_symbolic_tracing
    )
    faults.ineffective_fx_monkeypatch()
    monkeypatch.setattr(symbolic_trace, "_is_fx_tracing_flag", True)
    assert symbolic_trace.is_fx_symbolic_tracing() is False
    with pytest.raises(RuntimeError, match=FX_ERROR):
        compiled(torch.ones(2))


def test_nested_fx_trace_off_runs_eager_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    """With error_on_nested_fx_trace off, a call under the FX flag runs eager, compiles nothing."""
    from torch._dynamo.utils import counters

    compiled = torch.compile(_double)
    monkeypatch.setattr(symbolic_trace, "_is_fx_tracing_flag", True)
    graphs = counters["stats"]["unique_graphs"]
    with torch._dynamo.config.patch(error_on_nested_fx_trace=False):
        out = compiled(torch.ones(2))
    assert out.tolist() == [2.0, 2.0]
    assert counters["stats"]["unique_graphs"] == graphs


def test_dynamo_settings_do_not_reach_other_threads() -> None:
    """torch 2.13 keeps dynamo config overrides per thread: workers must set their own."""
    seen: list[bool] = []
    faults.set_nested_fx_trace("eager")
    try:
        t = threading.Thread(
            target=lambda: seen.append(torch._dynamo.config.error_on_nested_fx_trace)
        )
        t.start()
        t.join()
        assert torch._dynamo.config.error_on_nested_fx_trace is False
    finally:
        faults.set_nested_fx_trace("error")
    assert seen == [True]


def _saved(tmp_path: Path, **cfg_fields: object) -> tuple[TrainConfig, Path]:
    cfg = TrainConfig(workspace=tmp_path, **cfg_fields)  # type: ignore[arg-type]
    model = Drafter(cfg.model)
    opt = torch.optim.AdamW(model.parameters())
    state = {"drafter": model.state_dict(), "optimizer": opt.state_dict()}
    meta = checkpoint.metadata(cfg, 7, {"size": 3}, 123.0)
    return cfg, checkpoint.save(cfg.ws, 7, state, meta)


def test_checkpoint_records_versions_config_and_checksums(tmp_path: Path) -> None:
    """step_N holds weights, optimizer and a metadata record an investigator can diff."""
    cfg, path = _saved(tmp_path)
    assert path.name == "step_7"
    assert sorted(p.name for p in path.iterdir()) == sorted(checkpoint.FILES)
    loaded = checkpoint.load(cfg.ws, 7)
    meta = loaded["metadata"]
    assert meta["torch"] == {"version": torch.__version__, "git_version": torch.version.git_version}
    assert meta["step"] == 7 and meta["dataset"] == {"size": 3}
    assert meta["config"]["workspace"] == str(tmp_path)
    assert meta["sources"]["runner.py"] == checkpoint.md5(checkpoint.PACKAGE_DIR / "runner.py")
    assert meta["emulations"] == []
    assert checkpoint.steps(cfg.ws) == [7]


def test_recorded_torch_version_is_an_announced_emulation(tmp_path: Path) -> None:
    """--record-torch-version writes another version, and says so in the same record."""
    _, path = _saved(tmp_path, record_torch_version="2.11.0+cu130")
    meta = json.loads((path / "metadata.json").read_text())
    assert meta["torch"]["version"] == "2.11.0+cu130" != torch.__version__
    assert meta["emulations"] == ["recorded_torch_version"]


def test_truncated_checkpoint_fails_to_load_in_torch(tmp_path: Path) -> None:
    """A half-written drafter.pt is refused by torch.load, not silently half-loaded."""
    from examples.dflash_trainer import sabotage

    cfg, _ = _saved(tmp_path)
    sabotage.truncate_checkpoint(cfg.ws, None)
    with pytest.raises(RuntimeError):
        checkpoint.load(cfg.ws, 7)


def test_half_written_step_dirs_are_not_checkpoints(tmp_path: Path) -> None:
    """step_N.tmp and a step_N without metadata are not offered for --resume."""
    cfg, _ = _saved(tmp_path)
    (cfg.ws.checkpoints / "step_9.tmp").mkdir()
    (cfg.ws.checkpoints / "step_11").mkdir()
    assert checkpoint.steps(cfg.ws) == [7]


def test_error_text_exists_only_in_torch() -> None:
    """The trainer never writes torch's error text itself: it can only come from torch."""
    sources = Path(checkpoint.PACKAGE_DIR).rglob("*.py")
    assert not [p for p in sources if FX_ERROR in p.read_text()]
