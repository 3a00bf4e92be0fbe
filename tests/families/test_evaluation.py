"""``agilerl evaluate`` on a saved agent of every family: the family of the agent's
algorithm evaluates it (multi-agent teams on their PettingZoo environment, bandits on
their tables) or refuses in one sentence saying what to do (LLM agents)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from agilerl.algorithms import IPPO, MADDPG, MATD3, NeuralUCB
from agilerl.cli import main
from agilerl.evaluation import EvaluationError, agent_family
from agilerl.families import FAMILIES, family_for
from agilerl.families.bandits.env import BanditEnv
from agilerl.families.multi_agent.envs import make_parallel_env
from agilerl.models.base import AgentType
from agilerl.models.env import BanditEnvSpec, PzEnvSpec
from agilerl.models.registry import ALGO_REGISTRY

NET = {"encoder_config": {"hidden_size": [16]}, "head_config": {"hidden_size": [16]}}


def saved_team(cls, document, path, **kwargs):
    """A team built for ``document``'s environment, saved recording it."""
    env = make_parallel_env(PzEnvSpec.model_validate(document))
    ids = env.possible_agents
    torch.manual_seed(0)
    agent = cls(
        {a: env.observation_space(a) for a in ids},
        {a: env.action_space(a) for a in ids},
        seed=0,
        **kwargs,
    )
    env.close()
    agent.environment = document
    agent.save_checkpoint(path)
    return path


CUE = {"name": "cue", "entrypoint": "agilerl.testing.cooperative:cue_game"}
AWKWARD = {"name": "awkward", "entrypoint": "agilerl.testing.cooperative:awkward_cue_game"}


@pytest.mark.parametrize(
    ("cls", "document"),
    [(MADDPG, CUE), (IPPO, CUE), (IPPO, AWKWARD), (MATD3, AWKWARD)],
    ids=["maddpg-cue", "ippo-cue", "ippo-awkward", "matd3-awkward"],
)
def test_a_saved_team_is_evaluated_on_its_pettingzoo_environment(cls, document, tmp_path, capsys):
    path = saved_team(cls, document, tmp_path / "team.pt")
    assert main(["evaluate", str(path), "--episodes", "2"]) == 0
    out, err = capsys.readouterr()
    assert f"({cls.__name__}) on {document['entrypoint']}" in err
    assert f"{document['entrypoint']}: 2 episodes, seeds 0..1, deterministic actions" in out
    assert main(["evaluate", str(path), "--episodes", "3", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["episodes"] == 3 and report["lengths"] == [4, 4, 4]  # the game's horizon
    # the team's return: both (or all three) agents' rewards summed, at most 1 each a step
    assert all(0 <= r <= 4 * len(report["returns"]) for r in report["returns"])
    assert all(float(r).is_integer() for r in report["returns"])
    # deterministic: the same seed gives the same returns
    assert main(["evaluate", str(path), "--episodes", "3", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["returns"] == report["returns"]


def test_a_team_on_an_mpe_environment_cut_short(tmp_path, capsys):
    pytest.importorskip("mpe2")
    document = {"name": "mpe2.simple_speaker_listener_v4"}
    path = saved_team(MATD3, document, tmp_path / "team.pt")
    args = ["evaluate", str(path), "--episodes", "2", "--max-episode-steps", "5"]
    assert main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["lengths"] == [5, 5] and report["environment"] == document["name"]


def _error(capsys, *args):
    assert main(["evaluate", *args]) == 1
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("agilerl:")]
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_a_team_is_refused_what_it_cannot_do_in_one_line(tmp_path, capsys):
    path = saved_team(MADDPG, CUE, tmp_path / "team.pt")
    assert "leave --stochastic out" in _error(capsys, str(path), "--stochastic")
    assert "records no video" in _error(capsys, str(path), "--video", str(tmp_path / "a.gif"))
    other = tmp_path / "other.py"
    other.write_text(
        "from agilerl.testing.cooperative import cue_game\n"
        "def make():\n    return cue_game(num_actions=3)\n"
    )
    manifest = tmp_path / "other.yaml"
    manifest.write_text(
        "version: 1\nalgorithm: {name: MADDPG}\n"
        f"environment: {{name: other, entrypoint: 'other.py:make', path: '{tmp_path}'}}\n"
    )
    assert "the team was trained on another environment" in _error(
        capsys, str(path), "--manifest", str(manifest)
    )


def test_multi_agent_predict_acts_on_one_unbatched_step():
    env = make_parallel_env(PzEnvSpec.model_validate(AWKWARD))
    ids = env.possible_agents
    agent = IPPO(
        {a: env.observation_space(a) for a in ids}, {a: env.action_space(a) for a in ids}, seed=0
    )
    obs, infos = env.reset(seed=0)
    actions = agent.predict(obs, infos)
    assert set(actions) == set(obs)
    for agent_id, action in actions.items():
        assert env.action_space(agent_id).contains(action)
    assert agent.predict(obs, infos) == actions  # deterministic


# -- bandits --------------------------------------------------------------------------------
def bandit_tables(folder: Path) -> dict[str, str]:
    (folder / "features.csv").write_text("a,b\n" + "".join(f"{i},{-i}\n" for i in range(12)))
    (folder / "targets.csv").write_text("label\n" + "".join(f"{'xyz'[i % 3]}\n" for i in range(12)))
    return {"name": "tiny", "features": "features.csv", "targets": "targets.csv"}


def test_a_bandit_records_absolute_tables_and_is_evaluated_on_them(tmp_path, capsys):
    section = BanditEnvSpec.model_validate(bandit_tables(tmp_path))
    family = FAMILIES[AgentType.BanditAgent]
    document = family.recorded_environment(section, tmp_path)
    assert document["features"] == str(tmp_path / "features.csv")  # absolute
    env = BanditEnv.from_spec(section, tmp_path)
    torch.manual_seed(0)
    agent = NeuralUCB(env.observation_space, env.action_space, net_config=NET, seed=0)
    agent.environment = document
    path = tmp_path / "bandit.pt"
    agent.save_checkpoint(path)
    args = ["evaluate", str(path), "--episodes", "2", "--max-episode-steps", "20"]
    assert main(args) == 0
    assert "tiny: 2 episodes, seeds 0..1, deterministic actions" in capsys.readouterr().out
    assert main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["episodes"] == 2 and report["lengths"] == [20, 20]
    assert all(0.0 <= r <= 1.0 and (r * 20).is_integer() for r in report["returns"])
    # the first round's rate is the greedy pulls' on the rows seeded 0
    contexts, total = env.reset(seed=0), 0.0
    for _ in range(20):
        contexts, reward = env.step(agent.predict(contexts))
        total += reward
    assert report["returns"][0] == total / 20


def test_a_bandit_is_evaluated_on_a_manifest_whose_tables_are_beside_it(
    tmp_path, capsys, monkeypatch
):
    """``--manifest`` reads the tables relative to the manifest, as training does, from
    any working directory."""
    data = tmp_path / "run"
    data.mkdir()
    env = BanditEnv.from_spec(BanditEnvSpec.model_validate(bandit_tables(data)), data)
    torch.manual_seed(0)
    agent = NeuralUCB(env.observation_space, env.action_space, net_config=NET, seed=0)
    path = tmp_path / "bandit.pt"
    agent.save_checkpoint(path)  # records no environment: --manifest names it
    manifest = data / "bandit.yaml"
    manifest.write_text(
        "algorithm: {name: NeuralUCB}\n"
        "environment: {name: tiny, features: features.csv, targets: targets.csv}\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    args = ["evaluate", str(path), "--manifest", str(manifest), "--max-episode-steps", "20"]
    assert main([*args, "--episodes", "1", "--format", "json"]) == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    assert report["lengths"] == [20] and 0.0 <= report["returns"][0] <= 1.0


# -- LLM agents -----------------------------------------------------------------------------
def test_an_llm_agent_is_refused_with_what_to_do():
    family = family_for(ALGO_REGISTRY.get("GRPO").spec_cls)
    assert family is FAMILIES[AgentType.LLMAgent]
    agent = SimpleNamespace(name="GRPO")
    for call in (
        lambda: family.evaluation_environment({"dataset": "x.jsonl"}, agent),
        lambda: family.evaluate_saved(agent, {}, episodes=1, seed=0, deterministic=True),
    ):
        with pytest.raises(EvaluationError) as caught:
            call()
        message = str(caught.value)
        assert message.startswith("GRPO (LLM fine-tuning) cannot be evaluated on an environment")
        assert "test split by `agilerl train`" in message and "best_adapter/" in message
        assert "\n" not in message


def test_every_algorithm_has_a_family_that_evaluates_or_refuses():
    for name in ALGO_REGISTRY.names():
        family = agent_family(SimpleNamespace(name=name))
        assert family is family_for(ALGO_REGISTRY.get(name).spec_cls)


# -- dataset collect ------------------------------------------------------------------------
def test_dataset_collect_refuses_a_team_as_its_policy(tmp_path, capsys):
    path = saved_team(MADDPG, CUE, tmp_path / "team.pt")
    args = ["dataset", "collect", "CartPole-v1", "-o", str(tmp_path / "d.h5"), "--steps", "5"]
    assert main([*args, "--policy", str(path)]) == 1
    err = capsys.readouterr().err
    assert "a MADDPG agent acts in no single Gymnasium environment" in err
    assert "needs a single-agent policy" in err and "Traceback" not in err
