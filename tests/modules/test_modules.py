"""Evolvable modules: exact growth, bounds, spec round trip, trainability after mutation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.models import CnnSpec, LstmSpec, MlpSpec, MultiInputSpec, SimbaSpec
from agilerl.modules import (
    EvolvableCNN,
    EvolvableLSTM,
    EvolvableMLP,
    EvolvableMultiInput,
    EvolvableSimBa,
)
from agilerl.modules.base import SAFE_ACTIVATIONS

IMG = (3, 12, 12)
DICT_SPACE = spaces.Dict(
    {
        "img": spaces.Box(0.0, 1.0, IMG),
        "vec": spaces.Box(-1.0, 1.0, (4,)),
        "img2": spaces.Box(0.0, 1.0, IMG),
    }
)
SMALL_CNN = {"channel_size": [8, 8], "kernel_size": [3, 3], "stride_size": [2, 1]}


def make(kind: str, **overrides):
    """A small module of ``kind`` and a matching input batch."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    if kind == "mlp":
        spec = MlpSpec(**{"hidden_size": [16, 16], "max_mlp_nodes": 64, **overrides})
        return EvolvableMLP(5, 3, spec), torch.randn(8, 5, generator=g)
    if kind == "cnn":
        spec = CnnSpec(**{**SMALL_CNN, "max_channel_size": 32, "max_hidden_layers": 4, **overrides})
        return EvolvableCNN(IMG, 3, spec), torch.randn(8, *IMG, generator=g)
    if kind == "simba":
        spec = SimbaSpec(**{"hidden_size": 16, "num_blocks": 1, "max_mlp_nodes": 64, **overrides})
        return EvolvableSimBa(5, 3, spec), torch.randn(8, 5, generator=g)
    if kind == "lstm":
        spec = LstmSpec(
            **{
                "hidden_state_size": 16,
                "num_layers": 2,
                "max_hidden_state_size": 64,
                "max_layers": 3,
            }
            | overrides
        )
        return EvolvableLSTM(5, 3, spec), torch.randn(8, 4, 5, generator=g)
    if kind == "multi":
        spec = MultiInputSpec(
            **{
                "latent_dim": 16,
                "max_latent_dim": 48,
                "vector_space_mlp": True,
                "cnn_config": {**SMALL_CNN, "max_channel_size": 32, "max_hidden_layers": 3},
                "mlp_config": {"hidden_size": [16], "max_mlp_nodes": 48, "max_hidden_layers": 2},
                **overrides,
            }
        )
        x = {
            "img": torch.rand(8, *IMG, generator=g),
            "vec": torch.randn(8, 4, generator=g),
            "img2": torch.rand(8, *IMG, generator=g),
        }
        return EvolvableMultiInput(DICT_SPACE, 3, spec), x
    raise AssertionError(kind)


KINDS = ["mlp", "cnn", "simba", "lstm", "multi"]
ALL_MUTATIONS = [(kind, name) for kind in KINDS for name in make(kind)[0].mutation_methods()]

# (kind, spec overrides, mutation): growth that must leave the function unchanged.
EXACT_GROWTH = [
    ("mlp", {"layer_norm": False}, "add_node"),
    ("mlp", {"layer_norm": True}, "add_node"),
    ("mlp", {"layer_norm": True, "activation": "Sigmoid"}, "add_node"),
    ("mlp", {"layer_norm": False, "activation": "Tanh"}, "add_node"),
    ("mlp", {"layer_norm": False, "activation": "ReLU"}, "add_layer"),
    ("cnn", {}, "add_channel"),
    ("cnn", {"layer_norm": True}, "add_channel"),
    ("cnn", {}, "add_layer"),
    ("simba", {}, "add_block"),
    ("simba", {}, "add_node"),
    ("lstm", {}, "add_node"),
    ("lstm", {"num_layers": 1}, "add_node"),
    ("multi", {}, "grow_latent"),
    ("multi", {}, "cnn.add_channel"),
    ("multi", {"mlp_config": {"hidden_size": [16], "layer_norm": False}}, "mlp.add_node"),
    ("multi", {"mlp_config": {"hidden_size": [16]}}, "mlp.add_node"),
]


def test_mutation_methods_are_sorted_and_named():
    assert make("mlp")[0].mutation_methods() == [
        "add_layer",
        "add_node",
        "change_activation",
        "remove_layer",
        "remove_node",
    ]
    assert make("cnn")[0].mutation_methods() == [
        "add_channel",
        "add_layer",
        "change_activation",
        "change_kernel",
        "remove_channel",
        "remove_layer",
    ]
    assert make("simba")[0].mutation_methods() == [
        "add_block",
        "add_node",
        "remove_block",
        "remove_node",
    ]
    assert make("lstm")[0].mutation_methods() == [
        "add_layer",
        "add_node",
        "remove_layer",
        "remove_node",
    ]
    names = make("multi")[0].mutation_methods()
    assert {"grow_latent", "shrink_latent", "cnn.add_channel", "mlp.add_node"} <= set(names)
    assert names == sorted(names)


def test_unknown_mutation_raises():
    module, _ = make("mlp")
    with pytest.raises(KeyError):
        module.mutate("add_block", np.random.default_rng(0))


@pytest.mark.parametrize(("kind", "overrides", "name"), EXACT_GROWTH)
@pytest.mark.parametrize("seed", [0, 1])
def test_growth_preserves_the_function(kind, overrides, name, seed):
    module, x = make(kind, **overrides)
    module.eval()
    with torch.no_grad():
        before = module(x)
    info = module.mutate(name, np.random.default_rng(seed))
    assert info, "growth was expected to happen"
    with torch.no_grad():
        after = module(x)
    torch.testing.assert_close(after, before, atol=1e-5, rtol=0)


def test_lstm_new_units_are_trainable():
    """New hidden units are silent (exact growth) but not dead: they get gradients."""
    module, x = make("lstm", num_layers=1)
    module.mutate("add_node", np.random.default_rng(0))
    module(x).pow(2).sum().backward()
    assert module.out.weight.grad[:, 16:].abs().sum() > 0
    assert module.lstm.weight_hh_l0.grad[:, 16:].abs().sum() > 0


@pytest.mark.parametrize(("kind", "name"), ALL_MUTATIONS)
def test_bounds_are_respected(kind, name):
    module, _ = make(kind)
    rng = np.random.default_rng(0)
    for _ in range(30):
        if not module.mutate(name, rng):
            break
    else:
        if "activation" in name or "kernel" in name:
            return  # unbounded by design
        pytest.fail(f"{name} never reached a bound")
    before = module.spec.model_copy(deep=True)
    shapes = [p.shape for p in module.parameters()]
    assert module.mutate(name, rng) == {}
    assert module.spec == before
    assert [p.shape for p in module.parameters()] == shapes
    # the spec still validates (bounds hold)
    type(module.spec).model_validate(module.spec.model_dump())


@pytest.mark.parametrize(("kind", "name"), ALL_MUTATIONS)
def test_mutation_updates_spec_and_still_trains(kind, name):
    module, x = make(kind)
    rng = np.random.default_rng(3)
    info = module.mutate(name, rng)
    if not info:  # a removal at the minimum: make room first
        grow = name.replace("remove", "add").replace("shrink", "grow")
        assert grow != name, f"{name} did nothing"
        assert module.mutate(grow, rng)
        info = module.mutate(name, rng)
    assert info, f"{name} did nothing"
    # the spec describes the mutated architecture
    fresh = type(module)(*module.constructor_args(), module.spec)
    assert [(k, v.shape) for k, v in fresh.state_dict().items()] == [
        (k, v.shape) for k, v in module.state_dict().items()
    ]
    fresh.load_state_dict(module.state_dict())
    # still trains: a tiny regression loss goes down
    target = torch.randn(8, 3, generator=torch.Generator().manual_seed(5))
    optimizer = torch.optim.Adam(module.parameters(), lr=1e-2)
    losses = []
    for _ in range(50):
        loss = (module(x) - target).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]


@pytest.mark.parametrize(("kind", "name"), ALL_MUTATIONS)
def test_same_seed_same_result(kind, name):
    a, x = make(kind)
    b, _ = make(kind)
    a.mutate(name, np.random.default_rng(11))
    b.mutate(name, np.random.default_rng(11))
    assert a.spec == b.spec
    with torch.no_grad():
        torch.testing.assert_close(a(x), b(x))


def test_clone_is_independent():
    module, x = make("cnn")
    twin = module.clone()
    module.eval()
    twin.eval()
    torch.testing.assert_close(twin(x), module(x))
    module.mutate("add_channel", np.random.default_rng(0))
    assert twin.spec != module.spec
    assert twin.spec.channel_size == [8, 8]


def test_mlp_add_layer_appends_identity_and_spec():
    module, _ = make("mlp")
    info = module.mutate("add_layer", np.random.default_rng(0))
    assert module.spec.hidden_size == [16, 16, 16]
    assert info["layer"] == 2
    torch.testing.assert_close(module.linears[2].weight, torch.eye(16))


def test_multi_input_cnn_mutation_keeps_all_image_encoders_alike():
    module, _ = make("multi")
    module.mutate("cnn.change_kernel", np.random.default_rng(2))
    specs = [module.cnns[k].spec for k in ("img", "img2")]
    assert specs[0] == specs[1] == module.spec.cnn_config


def test_cnn_rejects_kernels_that_do_not_fit():
    with pytest.raises(ValueError):
        EvolvableCNN((3, 4, 4), 2, CnnSpec(channel_size=[8], kernel_size=[5], stride_size=[1]))


def test_change_kernel_stays_within_the_input():
    module, x = make("cnn")
    rng = np.random.default_rng(0)
    for _ in range(10):
        module.mutate("change_kernel", rng)
        assert module(x).shape == (8, 3)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_cnn_change_activation_keeps_weights_and_updates_spec(layer_norm):
    module, x = make("cnn", layer_norm=layer_norm, activation="Sigmoid")
    before = {k: v.clone() for k, v in module.state_dict().items()}
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(6):
        old = module.spec.activation
        info = module.mutate("change_activation", rng)
        new = info["activation"]
        assert new != old and new in SAFE_ACTIVATIONS
        assert module.spec.activation == new
        assert all(type(act).__name__ == new for act in module.acts)
        seen.add(new)
    assert len(seen) > 1
    after = module.state_dict()
    assert after.keys() == before.keys()
    for key, value in before.items():
        torch.testing.assert_close(after[key], value)
    assert module(x).shape == (8, 3)


def test_multi_input_cnn_change_activation_applies_to_every_image_encoder():
    module, x = make("multi")
    info = module.mutate("cnn.change_activation", np.random.default_rng(0))
    new = info["activation"]
    assert module.spec.cnn_config.activation == new
    for key in ("img", "img2"):
        assert module.cnns[key].spec.activation == new
        assert all(type(act).__name__ == new for act in module.cnns[key].acts)
    assert module(x).shape == (8, 3)
