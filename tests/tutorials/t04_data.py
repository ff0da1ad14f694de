"""Data: a map-style Dataset, DataLoader batching and collation, samplers, random_split sizes."""
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, SequentialSampler


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        x = torch.tensor([float(idx), float(idx) ** 2])
        return {"x": x, "label": idx % 3, "name": f"item{idx}"}


ds = Squares(10)
print(len(ds), ds[3])
loader = DataLoader(ds, batch_size=4)
for batch in loader:
    print(batch["x"].shape, batch["label"], batch["name"])
print(len(loader), len(DataLoader(ds, batch_size=4, drop_last=True)))
for xb in DataLoader(ds, batch_size=None, sampler=[7, 2]):
    print(xb["x"], xb["label"])
print(list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)))
pairs = DataLoader([(torch.tensor([i, i + 1]), i) for i in range(5)], batch_size=2,
                   collate_fn=lambda b: torch.stack([t for t, _ in b]).sum(0))
print([t.tolist() for t in pairs])
tensors = DataLoader(torch.arange(12).view(6, 2), batch_size=4)
print([t for t in tensors])
try:
    DataLoader(ds, batch_size=2, shuffle=True, sampler=[0, 1])
except ValueError as e:
    print("ValueError:", e)
