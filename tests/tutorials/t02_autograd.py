"""Autograd: gradients of a small model, no_grad, detach, accumulation, a custom Function."""
import torch

x = torch.ones(5)
y = torch.zeros(3)
w = torch.linspace(-1, 1, 15).reshape(5, 3).requires_grad_()
b = torch.tensor([0.1, -0.2, 0.3], requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
print(f"Gradient function for z = {z.grad_fn}")
print("loss", round(loss.item(), 5))
loss.backward()
print(w.grad)
print(b.grad)
print(z.requires_grad)
with torch.no_grad():
    z = torch.matmul(x, w) + b
print(z.requires_grad)
z_det = (torch.matmul(x, w) + b).detach()
print(z_det.requires_grad)
inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\n{inp.grad}")
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")
a = torch.tensor([2.0, 3.0], requires_grad=True)
q = 3 * a ** 3 - a ** 2
q.backward(gradient=torch.tensor([1.0, 1.0]))
print(a.grad, 9 * a ** 2 - 2 * a == a.grad)


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


s = torch.tensor([0.0, 1.0], requires_grad=True)
e = Exp.apply(s)
e.sum().backward()
print(e, s.grad)
h = torch.tensor([1.0, 2.0], requires_grad=True)
g = h * 2
g.register_hook(lambda grad: grad * 10)
g.sum().backward()
print(h.grad)
u = torch.tensor(3.0, requires_grad=True)
(du,) = torch.autograd.grad(u ** 3, u, create_graph=True)
(d2u,) = torch.autograd.grad(du, u)
print(du, d2u)
try:
    q.backward(gradient=torch.tensor([1.0, 1.0]))
except RuntimeError as err:
    print("RuntimeError:", str(err).split(".")[0])
