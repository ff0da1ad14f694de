"""Neural network building blocks (``torch.nn``)."""
from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Buffer, Parameter  # noqa: F401
