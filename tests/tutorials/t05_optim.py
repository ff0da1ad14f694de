"""Optimizers and schedulers: Adam, AdamW and SGD with momentum on a small regression, learning rates."""
import torch
from torch import nn

torch.set_printoptions(precision=5)
X = torch.linspace(-1, 1, 32).reshape(16, 2)
target = X @ torch.tensor([[2.0], [-3.0]]) + 0.5


def make_model():
    m = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.linspace(-0.3, 0.4, p.numel()).reshape(p.shape) + 0.05 * i)
    return m


for name in ("SGD", "Adam", "AdamW"):
    model = make_model()
    if name == "SGD":
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    elif name == "Adam":
        opt = torch.optim.Adam(model.parameters(), lr=0.05, betas=(0.8, 0.99), amsgrad=True)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
        sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
    loss_fn = nn.MSELoss()
    for step in range(8):
        opt.zero_grad()
        loss = loss_fn(model(X), target)
        loss.backward()
        opt.step()
        sched.step()
        print(f"{name} step {step}: loss {loss.item():.6f} lr {sched.get_last_lr()[0]:.6f}")
    print(name, model[2].weight.data, model[2].bias.data)
    state = opt.state_dict()
    print(sorted(state["param_groups"][0]), len(state["state"]), sorted(state["state"][0]))
