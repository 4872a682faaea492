"""The reference training program, shipped to the cluster in a ConfigMap and started by ``torchrun``.

Kept as text (the platform itself never imports torch); the test suite runs it with ``torchrun`` on CPU.
"""

FILE_NAME = "train.py"

SCRIPT = '''\
"""Reference distributed training: DDP on synthetic data, resumable from a shared checkpoint.

Every rank loads the latest checkpoint (the volume is shared), rank 0 writes it atomically every
CHECKPOINT_EVERY steps. NCCL on GPUs, gloo on CPU.
"""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    width = int(os.environ.get("MODEL_WIDTH", "1024"))
    steps = int(os.environ.get("TRAIN_STEPS", "1000"))
    every = int(os.environ.get("CHECKPOINT_EVERY", "100"))
    path = os.path.join(os.environ.get("CHECKPOINT_DIR", "/checkpoints"), "latest.pt")

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    if os.path.exists(path):
        state = torch.load(path, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
    ddp = DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
    generator = torch.Generator().manual_seed(1000 + rank)

    for step in range(start, steps):
        batch = torch.randn(64, width, generator=generator).to(device)
        loss = torch.nn.functional.mse_loss(ddp(batch), batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if (step + 1) % every == 0 or step + 1 == steps:
            if rank == 0:
                state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step + 1}
                os.makedirs(os.path.dirname(path), exist_ok=True)
                torch.save(state, path + ".tmp")
                os.replace(path + ".tmp", path)
                print(f"step {step + 1}/{steps} loss {loss.item():.4f}", flush=True)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''
