"""Layers and losses: a small CNN in train and eval mode, BatchNorm's running statistics, forward hooks,
the common losses."""
import torch
import torch.nn.functional as F
from torch import nn

torch.set_printoptions(precision=4)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(4, 6, 3)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(6 * 2 * 2, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv1(x))))
        x = F.avg_pool2d(F.relu(self.conv2(x)), 1)
        x = torch.flatten(x, 1)
        return self.fc(self.drop(x))


net = Net()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * (0.7 + i)).reshape(p.shape) * 0.5)
print(net)
x = torch.sin(torch.arange(2 * 64, dtype=torch.float32)).reshape(2, 1, 8, 8)
seen = []
handle = net.conv2.register_forward_hook(lambda m, inp, out: seen.append((type(m).__name__, tuple(out.shape))))
net.eval()
out = net(x)
print(out, seen)
handle.remove()
net.train()
net.drop.p = 0.0
out = net(x)
print(out.shape, net.bn.running_mean, net.bn.running_var, net.bn.num_batches_tracked)
y = torch.tensor([2, 0])
print(F.cross_entropy(out, y), F.cross_entropy(out, y, label_smoothing=0.1))
print(F.nll_loss(F.log_softmax(out, 1), y, reduction="sum"))
p = torch.sigmoid(out[:, 0])
t = torch.tensor([1.0, 0.0])
print(F.binary_cross_entropy(p, t), F.mse_loss(out[:, 1], t), F.l1_loss(out[:, 2], t))
print(F.smooth_l1_loss(out[:, 1], t, beta=0.5), nn.CrossEntropyLoss(reduction="none")(out, y),
      F.binary_cross_entropy_with_logits(out[:, 0], t), F.huber_loss(out[:, 2], t, delta=0.5))
loss = F.cross_entropy(out, y)
loss.backward()
print(net.conv1.weight.grad.abs().sum(), net.fc.bias.grad)
print(sum(p.numel() for p in net.parameters()), [n for n, _ in net.named_buffers()])
print(F.softmax(torch.tensor([[1.0, 2.0, 3.0]]), dim=-1), F.gelu(torch.tensor([-1.0, 0.5])),
      F.leaky_relu(torch.tensor([-2.0, 2.0]), 0.1), F.one_hot(torch.tensor([0, 2]), 3))
emb = nn.Embedding(5, 2)
with torch.no_grad():
    emb.weight.copy_(torch.arange(10.0).view(5, 2))
print(emb(torch.tensor([[1, 4], [0, 0]])), nn.LayerNorm(3)(torch.tensor([[1.0, 2.0, 4.0]])))
