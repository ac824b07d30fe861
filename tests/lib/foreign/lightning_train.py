"""A user's training script for PyTorch Lightning: a tiny next-token LightningModule on
the token ids in ``data/train.jsonl``, trained by ``lightning.Trainer`` on CPU with its own
``CSVLogger`` (``lightning_logs/version_0/metrics.csv``, ``hparams.yaml``) and
``ModelCheckpoint`` (``…/checkpoints/epoch=E-step=S.ckpt``). ``env.json`` records the
versions the run used, as many scripts save them at start.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import lightning
import torch
from lightning.pytorch.callbacks import ModelCheckpoint, ThroughputMonitor
from lightning.pytorch.loggers import CSVLogger

VOCAB = 128


class NextToken(lightning.LightningModule):
    def __init__(self, hidden: int = 32, lr: float = 1e-3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.embed = torch.nn.Embedding(VOCAB, hidden)
        self.mix = torch.nn.GRU(hidden, hidden, batch_first=True)
        self.head = torch.nn.Linear(hidden, VOCAB)

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        (ids,) = batch
        hidden, _ = self.mix(self.embed(ids[:, :-1]))
        logits = self.head(hidden)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=self.hparams["lr"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--save-steps", type=int, default=10)
    # Lightning's own throughput figures (train/items_per_sec: tokens here, as length_fn
    # counts them; train/samples_per_sec), logged with the metrics.
    parser.add_argument("--throughput-monitor", action="store_true")
    args = parser.parse_args()
    env = {
        "torch": torch.__version__,
        "lightning": lightning.__version__,
        "python": platform.python_version(),
    }
    Path("env.json").write_text(json.dumps(env, indent=1) + "\n")
    lightning.seed_everything(0)
    lines = Path("data/train.jsonl").read_text().splitlines()
    rows = [json.loads(line)["input_ids"] for line in lines if line]
    dataset = torch.utils.data.TensorDataset(torch.tensor(rows))
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, shuffle=True)
    trainer = lightning.Trainer(
        max_steps=args.steps,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger("."),
        callbacks=[
            ModelCheckpoint(every_n_train_steps=args.save_steps, save_top_k=-1),
            *(
                [
                    ThroughputMonitor(
                        batch_size_fn=lambda batch: batch[0].size(0),
                        length_fn=lambda batch: batch[0].numel(),
                        window_size=5,
                    )
                ]
                if args.throughput_monitor
                else []
            ),
        ],
        log_every_n_steps=5,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(NextToken(), loader)


if __name__ == "__main__":
    main()
