"""Workspaces of two trainers that cannot run here, written in the layout and line format
their public sources write, with real files (real safetensors, ``torch.save`` pickles,
``save_pretrained`` configs, Python logging):

``specforge/``: SpecForge's DFlash trainer, ``scripts/train_dflash.py`` of
sgl-project/SpecForge (at commit 83ec0c3d, before it became ``specforge train``). It needs
CUDA and FSDP. ``save_checkpoint`` writes ``OUTPUT_DIR/epoch_{epoch}_step_{step}/`` holding
``training_state.pt`` (``epoch``, ``global_step``, ``args`` and the optimizer's state) and
the draft model's ``save_pretrained`` (``config.json``, ``model.safetensors``), and a last
one after training named with ``args.num_epochs``; ``record_metrics`` logs
``Train - Step N [N/TOTAL?], Loss: x, Acc: y`` through ``specforge.utils``' logger, whose
format ``main`` sets (``%(asctime)s - %(levelname)s - %(name)s - %(message)s``,
``%m/%d/%Y %H:%M:%S``); the console goes where its launch command sends it.

``torchtune/``: torchtune's ``full_finetune_single_device`` recipe (pytorch/torchtune
``recipes/full_finetune_single_device.py``) with ``FullModelHFCheckpointer``
(``torchtune/training/checkpointing/_checkpointer.py``: ``OUTPUT_DIR/epoch_{epoch}/``
holding ``model-00001-of-00001.safetensors``, the input checkpoint's ``config.json``
copied, and ``recipe_state.pt`` for an intermediate checkpoint) and ``DiskLogger``
(``torchtune/training/metric_logging.py``: ``LOG_DIR/log_{unix time}.txt``, one
``Step N | loss:x lr:y tokens_per_second_per_gpu:z `` line per ``log_dict``); its console
(``tune run … > train.log 2>&1``) holds the recipe's and the checkpointer's ``log.info``
lines in the form ``torchtune/utils/_logging.py``'s ``get_logger`` documents
(``INFO:torchtune.utils._logging:…``).

Usage: ``python written_layouts.py ROOT``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM


def tiny_llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        bos_token_id=0,
        eos_token_id=0,
    )
    return LlamaForCausalLM(config)


def specforge(ws: Path) -> None:
    out = ws / "outputs" / "qwen3-8b-dflash"
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%m/%d/%Y %H:%M:%S",
        level=logging.INFO,
        handlers=[logging.FileHandler(ws / "train.log")],
        force=True,
    )
    logger = logging.getLogger("specforge.utils")
    model = tiny_llama()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    num_epochs, per_epoch, log_interval, save_interval = 1, 120, 10, 50
    args = argparse.Namespace(
        output_dir=str(out),
        num_epochs=num_epochs,
        log_interval=log_interval,
        save_interval=save_interval,
        accumulation_steps=1,
        seed=0,
    )
    logger.info("Starting training from epoch 0, step 0")

    def save(epoch: int, step: int) -> None:
        save_dir = out / f"epoch_{epoch}_step_{step}"
        save_dir.mkdir(parents=True, exist_ok=True)
        state = {"epoch": epoch, "global_step": step, "args": args, **optimizer.state_dict()}
        torch.save(state, save_dir / "training_state.pt")
        model.save_pretrained(save_dir)
        logger.info(f"Saved checkpoint to {save_dir}")

    for step in range(1, num_epochs * per_epoch + 1):
        if step % log_interval == 0:
            loss, acc = 8.0 / (1 + step / 40), min(0.9, step / 200)
            total = num_epochs * per_epoch // args.accumulation_steps
            logger.info(f"Train - Step {step} [{step}/{total}?], Loss: {loss:.4f}, Acc: {acc:.4f}")
        if step % save_interval == 0:
            save(0, step)
    save(num_epochs, num_epochs * per_epoch)
    logging.shutdown()


def torchtune(ws: Path) -> None:
    out = ws / "output"
    logging.basicConfig(
        level=logging.INFO, handlers=[logging.FileHandler(ws / "train.log")], force=True
    )
    console = logging.getLogger("torchtune.utils._logging")
    model = tiny_llama()
    console.info("Model is initialized with precision torch.bfloat16.")
    console.info("Tokenizer is initialized from file.")
    console.info("Optimizer is initialized.")
    console.info("Loss is initialized.")
    console.info("Learning rate scheduler is initialized.")
    log_dir = out / "logs"
    log_dir.mkdir(parents=True)
    step = 0
    with (log_dir / f"log_{int(time.time())}.txt").open("w") as log:
        for epoch in range(2):
            for _ in range(20):
                step += 1
                if step % 5 == 0:
                    payload = {
                        "loss": 4.8 - step * 0.01,
                        "lr": 2e-5,
                        "tokens_per_second_per_gpu": 812.4,
                    }
                    log.write(f"Step {step} | ")
                    for name, data in payload.items():
                        log.write(f"{name}:{data} ")
                    log.write("\n")
            ckpt = out / f"epoch_{epoch}"
            ckpt.mkdir()
            weights = {k: v.contiguous() for k, v in model.state_dict().items()}
            shard = ckpt / "model-00001-of-00001.safetensors"
            save_file(weights, str(shard), metadata={"format": "pt"})
            size = shard.stat().st_size / 1024**3
            console.info(f"Model checkpoint of size {size:.2f} GiB saved to {shard}")
            model.config.to_json_file(str(ckpt / "config.json"))
            if epoch == 0:
                torch.save(
                    {"epochs_run": 1, "seed": 0, "total_epochs": 2}, ckpt / "recipe_state.pt"
                )


def main() -> int:
    root = Path(sys.argv[1])
    for name, write in (("specforge", specforge), ("torchtune", torchtune)):
        ws = root / name
        ws.mkdir(parents=True)
        write(ws)
    logging.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
