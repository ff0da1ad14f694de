"""nn: a model as a Module, its parameters and state_dict, a training loop with DataLoader and SGD."""
import io

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(4 * 4, 8),
            nn.ReLU(),
            nn.Linear(8, 8),
            nn.ReLU(),
            nn.Linear(8, 3),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


model = NeuralNetwork()
print(model)
with torch.no_grad():   # deterministic weights, the same in both libraries
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (1 + i / 10))
for name, param in model.named_parameters():
    print(f"Layer: {name} | Size: {param.size()} | Values : {param[:2]} \n")
X = torch.linspace(-1, 1, 20 * 16).reshape(20, 4, 4)
labels = (torch.arange(20) * 7) % 3
logits = model(X)
pred_probab = nn.Softmax(dim=1)(logits)
print(pred_probab[:3], pred_probab.argmax(1))
loader = DataLoader(TensorDataset(X, labels), batch_size=6)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
for epoch in range(3):
    model.train()
    for batch, (xb, yb) in enumerate(loader):
        pred = model(xb)
        loss = loss_fn(pred, yb)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"epoch {epoch} batch {batch} loss: {loss.item():>7f}  [{len(xb)}]")
    model.eval()
    with torch.no_grad():
        correct = (model(X).argmax(1) == labels).type(torch.float).sum().item()
    print(f"Accuracy: {100 * correct / len(X):>0.1f}%")
buf = io.BytesIO()
torch.save(model.state_dict(), buf)
buf.seek(0)
model2 = NeuralNetwork()
print(model2.load_state_dict(torch.load(buf, weights_only=True)))
model2.eval()
print(torch.equal(model2(X), model(X)), list(model2.state_dict())[:2])
print(sum(p.numel() for p in model.parameters() if p.requires_grad))
