"""A user's training script for Hugging Face ``transformers.Trainer``: a causal LM two
layers deep (GPT-2 by default, ``--model llama`` for a Llama), randomly initialised from a
config built here (nothing is downloaded), on the token ids in ``data/train.jsonl``. The
Trainer writes its own layout under ``out/``: ``checkpoint-N/`` with ``trainer_state.json``,
``model.safetensors``, ``config.json``, ``optimizer.pt``, ``training_args.bin``; its log
lines go to the console.

The faults a user leaves in their own callbacks, each at a step given on the command line
(``global_step`` as the Trainer counts it, after the optimizer step of that step):

* ``--slow-after S --slow-seconds T``: a sleep left in ``on_step_end``, taken by every step
  after ``S``; the record logged at ``S`` is the last fast one.
* ``--nan-after S``: one weight filled with NaN at the end of step ``S``; from step ``S+1``
  the forward pass, the loss and the gradients are NaN.
  The Trainer logs that loss as NaN only under ``--no-nan-filter``
  (``logging_nan_inf_filter=False``); by default it logs ``0`` and ``grad_norm`` NaN.
* ``--hang-after S``: ``on_step_begin`` of step ``S+1`` sleeps an hour: the process stays
  alive, its console stops after step ``S``'s record.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    Trainer,
    TrainerCallback,
    TrainerControl,
    TrainerState,
    TrainingArguments,
)


class TokenIds(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    """The token ids; ``seconds``: each item takes that long to load (a slow disk, a
    tokenizer run per item)."""

    def __init__(self, path: Path, seconds: float = 0.0) -> None:
        rows = [json.loads(line)["input_ids"] for line in path.read_text().splitlines() if line]
        self.ids = torch.tensor(rows)
        self.seconds = seconds

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        if self.seconds:
            time.sleep(self.seconds)
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class SlowAfter(TrainerCallback):
    """A debugging sleep the user forgot in a callback."""

    def __init__(self, step: int, seconds: float) -> None:
        self.step, self.seconds = step, seconds

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        if state.global_step > self.step:
            time.sleep(self.seconds)


class NanAfter(TrainerCallback):
    """A weight gone NaN at the end of one step (an overflow, a bad init of a resumed head)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        if state.global_step == self.step:
            model = kw["model"]
            with torch.no_grad():
                next(model.parameters()).fill_(float("nan"))


class HangAfter(TrainerCallback):
    """Blocks before the step after ``step`` begins: alive, silent, no further step."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        if state.global_step == self.step:
            time.sleep(3600)


def build_model(name: str) -> PreTrainedModel:
    if name == "llama":
        llama = LlamaConfig(
            vocab_size=128,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=128,
        )
        return LlamaForCausalLM(llama)
    gpt2 = GPT2Config(
        vocab_size=128,
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(gpt2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--save-steps", type=int, default=10)
    parser.add_argument("--model", choices=["gpt2", "llama"], default="gpt2")
    parser.add_argument("--logging-steps", type=int, default=5)
    parser.add_argument("--tokens-seen", action="store_true")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--slow-after", type=int)
    parser.add_argument("--slow-seconds", type=float, default=0.0)
    # Every step this much longer, as a larger model's would take (a tiny model's 8 ms
    # steps save a checkpoint every few milliseconds; a real run's are seconds apart).
    parser.add_argument("--step-seconds", type=float, default=0.0)
    # Every item of the dataset this long to load: the loader, not the model, sets the pace.
    parser.add_argument("--slow-data", type=float, default=0.0)
    parser.add_argument("--nan-after", type=int)
    parser.add_argument("--hang-after", type=int)
    parser.add_argument("--no-nan-filter", action="store_true")
    # The Trainer's default draws its progress bar (tqdm, on stderr, redrawn with \r);
    # the runs that read the speed from the records turn it off, as many users do.
    parser.add_argument("--progress-bar", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = build_model(args.model)
    training = TrainingArguments(
        output_dir="out",
        max_steps=args.steps,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        logging_steps=args.logging_steps,
        save_steps=args.save_steps,
        # transformers 5 also takes "all"/"non_padding"/"no"; a bool is read as "all"/"no".
        include_num_input_tokens_seen=args.tokens_seen,
        report_to=[],
        use_cpu=True,
        dataloader_num_workers=0,
        disable_tqdm=not args.progress_bar,
        # The Trainer's default (True) counts a NaN step's loss as the mean loss since the
        # last record; once every step is NaN that mean is 0: the loss column reads 0 and
        # only grad_norm says nan.
        logging_nan_inf_filter=not args.no_nan_filter,
        seed=0,
    )
    callbacks: list[TrainerCallback] = []
    if args.step_seconds:
        callbacks.append(SlowAfter(0, args.step_seconds))
    if args.slow_after is not None:
        callbacks.append(SlowAfter(args.slow_after, args.slow_seconds))
    if args.nan_after is not None:
        callbacks.append(NanAfter(args.nan_after))
    if args.hang_after is not None:
        callbacks.append(HangAfter(args.hang_after))
    trainer = Trainer(
        model=model,
        args=training,
        train_dataset=TokenIds(Path("data/train.jsonl"), args.slow_data),
        callbacks=callbacks,
    )
    trainer.train(resume_from_checkpoint=True if args.resume else None)


if __name__ == "__main__":
    main()
