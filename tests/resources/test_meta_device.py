"""Building on the meta device (agilerl/resources/meta_device.py): shapes without
storage for what is made from a size, data kept where it is, and torch as it was after."""

from __future__ import annotations

import torch

from agilerl.resources.meta_device import built_on_meta, parameters_on_meta


def test_a_layer_too_large_to_allocate_is_built_with_shapes_only():
    with built_on_meta():
        layer = torch.nn.Linear(10**5, 10**5)  # 40 GB of float32 weights, if allocated
    assert layer.weight.device.type == "meta" and layer.bias.device.type == "meta"
    assert layer.weight.shape == (10**5, 10**5)
    assert sum(p.numel() for p in layer.parameters()) == 10**10 + 10**5


def test_tensors_made_from_data_or_on_a_named_device_stay_where_they_are_made():
    with built_on_meta():
        data = torch.as_tensor([1.0, 2.0])
        named = torch.zeros(3, device="cpu")
        sized = torch.zeros(3)
    assert data.device.type == "cpu" and data.tolist() == [1.0, 2.0]
    assert named.device.type == "cpu"
    assert sized.device.type == "meta"


def test_parameters_alone_move_to_meta_keeping_requires_grad():
    with parameters_on_meta():
        module = torch.nn.Module()
        module.register_parameter("w", torch.nn.Parameter(torch.ones(2), requires_grad=False))
        module.register_parameter("none", None)
    assert module.w.device.type == "meta" and not module.w.requires_grad
    assert module.none is None


def test_torch_builds_on_the_cpu_again_after_the_block_even_when_it_raised():
    register = torch.nn.Module.register_parameter
    try:
        with built_on_meta():
            raise RuntimeError("a constructor failed")
    except RuntimeError:
        pass
    assert torch.nn.Module.register_parameter is register
    assert torch.nn.Linear(2, 2).weight.device.type == "cpu"
    assert torch.empty(2).device.type == "cpu"
