"""A user's training script for Hugging Face ``transformers.Trainer``: a GPT-2 causal LM
two layers deep, randomly initialised from a config built here (nothing is downloaded),
on the token ids in ``data/train.jsonl``. The Trainer writes its own layout under
``out/``: ``checkpoint-N/`` with ``trainer_state.json``, ``model.safetensors``,
``config.json``, ``optimizer.pt``, ``training_args.bin``; its log lines go to the console.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class TokenIds(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    def __init__(self, path: Path) -> None:
        rows = [json.loads(line)["input_ids"] for line in path.read_text().splitlines() if line]
        self.ids = torch.tensor(rows)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--save-steps", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=128,
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = GPT2LMHeadModel(config)
    training = TrainingArguments(
        output_dir="out",
        max_steps=args.steps,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        logging_steps=5,
        save_steps=args.save_steps,
        report_to=[],
        use_cpu=True,
        dataloader_num_workers=0,
        disable_tqdm=True,
        seed=0,
    )
    trainer = Trainer(model=model, args=training, train_dataset=TokenIds(Path("data/train.jsonl")))
    trainer.train()


if __name__ == "__main__":
    main()
