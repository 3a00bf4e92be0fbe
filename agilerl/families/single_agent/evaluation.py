"""Episodes of one Gymnasium environment with ``agent.predict``, and a video of the
first (the single-agent and offline families' evaluation; :func:`agilerl.evaluation.
evaluate_agent` is this loop for users).

Episode ``i`` is reset with seed ``seed + i``, so the same agent, environment and seed
give the same returns. Sampled actions (``deterministic=False``) draw from generators
seeded by ``seed`` too, and the agent's own random state is left as it was.

A video records the first episode from ``render_mode="rgb_array"`` frames: ``.gif``
with Pillow, ``.mp4`` with the ffmpeg binary that ``imageio-ffmpeg`` (the ``video``
extra) bundles. Frames go to the writer as they come, so an episode is never held whole.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from agilerl.families.environments import EnvironmentSpecError
from agilerl.families.evaluation import EvaluationError, EvaluationResult, check_counts
from agilerl.families.single_agent.atari import scoring_spec
from agilerl.families.single_agent.envs import make_env
from agilerl.files.atomic import write_bytes
from agilerl.models.env import OFFLINE_DATASET_FIELDS, GymEnvSpec
from agilerl.resources.distribution import install_command
from agilerl.training.evaluation_cap import episode_steps, warn_if_saved_cut


# -- video writers ---------------------------------------------------------------------------
class _GifWriter:
    """Frames reduced to a 256-colour palette as they come (1 byte a pixel kept). Fast
    octree quantisation: exact for frames of few colours (most environments' renders),
    and 7x quicker than Pillow's default median cut (500 CartPole frames: 2 s, not 14)."""

    def __init__(self, fps: float) -> None:
        self.fps = fps
        self.frames: list[Any] = []

    def add(self, frame: np.ndarray) -> None:
        from PIL import Image

        image = Image.fromarray(frame).quantize(256, method=Image.Quantize.FASTOCTREE)
        self.frames.append(image)

    def finish(self) -> bytes:
        buffer = io.BytesIO()
        first, *rest = self.frames
        duration = max(int(round(1000 / self.fps)), 20)  # GIF delays are in 10 ms units
        first.save(buffer, format="GIF", save_all=True, append_images=rest, duration=duration)
        return buffer.getvalue()


class _Mp4Writer:
    """H.264 (yuv420p, which needs even sizes: odd frames get a copied edge row/column)."""

    def __init__(self, fps: float) -> None:
        try:
            import imageio_ffmpeg
        except ImportError:
            raise EvaluationError(
                f"video: writing .mp4 needs the video extra ({install_command('video')}, "
                "which bundles an ffmpeg binary); a .gif needs nothing more"
            ) from None
        self.fps = fps
        self.ffmpeg = imageio_ffmpeg
        self.folder = tempfile.TemporaryDirectory(prefix="agilerl-video-")
        self.path = Path(self.folder.name) / "video.mp4"
        self.stream: Any = None

    def add(self, frame: np.ndarray) -> None:
        height, width = frame.shape[:2]
        frame = np.pad(frame, ((0, height % 2), (0, width % 2), (0, 0)), mode="edge")
        if self.stream is None:
            size = (frame.shape[1], frame.shape[0])
            # imageio_ffmpeg takes fps as a float or Fraction (its docstring); pyright
            # reads int from the unannotated default (16).
            self.stream = self.ffmpeg.write_frames(
                str(self.path),
                size,
                fps=self.fps,  # pyright: ignore[reportArgumentType]
                macro_block_size=1,
            )
            self.stream.send(None)  # the generator starts ffmpeg on its first send
        self.stream.send(np.ascontiguousarray(frame))

    def finish(self) -> bytes:
        try:
            self.stream.close()  # waits for ffmpeg to write the file
            return self.path.read_bytes()
        finally:
            self.folder.cleanup()


#: Video file suffix -> writer (called with the frame rate).
VIDEO_WRITERS: dict[str, Callable[[float], Any]] = {".gif": _GifWriter, ".mp4": _Mp4Writer}


def _video_writer(path: Path, fps: float) -> Any:
    writer = VIDEO_WRITERS.get(path.suffix.lower())
    if writer is None:
        known = ", ".join(VIDEO_WRITERS)
        raise EvaluationError(f"video: {path}: unknown video format; use one of {known}")
    return writer(fps)


def _frame(env: Any, where: str) -> np.ndarray:
    frame = env.render()
    if not isinstance(frame, np.ndarray) or frame.ndim != 3 or frame.shape[2] not in (3, 4):
        raise EvaluationError(
            f"video: {where} gives no RGB frames with render_mode='rgb_array' "
            f"(render() returned {type(frame).__name__})"
        )
    return np.ascontiguousarray(frame[..., :3], dtype=np.uint8)


# -- environments ----------------------------------------------------------------------------
def environment_spec(environment: Any) -> GymEnvSpec:
    """A :class:`GymEnvSpec` from a Gymnasium id, a spec or a mapping of one."""
    if isinstance(environment, GymEnvSpec):
        return environment
    if isinstance(environment, str):
        return GymEnvSpec(name=environment)
    if isinstance(environment, dict):
        return GymEnvSpec.model_validate(environment)
    raise TypeError(
        f"environment must be a Gymnasium id, a GymEnvSpec or a mapping, got {environment!r}"
    )


def check_spaces(agent: Any, env: Any, where: str) -> None:
    """The agent was built for this environment's observation and action spaces."""
    for kind in ("observation_space", "action_space"):
        mine, theirs = getattr(agent, kind), getattr(env, kind)
        if mine != theirs:
            raise EvaluationError(
                f"{where}: the agent's {kind.replace('_', ' ')} {mine} is not the "
                f"environment's {theirs}: the agent was trained on another environment"
            )


@contextlib.contextmanager
def seeded_sampling(agent: Any, seed: int) -> Iterator[None]:
    """torch's and the agent's generators seeded for sampled actions, restored after."""
    saved = agent.rng
    agent.rng = np.random.default_rng(seed)
    device = agent.device
    # The CPU generator always; an accelerator's too when the agent samples on one.
    accelerated = device.type not in ("cpu", "meta")
    index = device.index
    if accelerated and index is None:  # "cuda" alone: the current device
        index = torch.get_device_module(device.type).current_device()
    devices = [index] if accelerated else []
    try:
        with torch.random.fork_rng(devices=devices, device_type=device.type):
            torch.manual_seed(seed)  # seeds every device's generator
            yield
    finally:
        agent.rng = saved


def run_episodes(
    agent: Any,
    environment: Any,
    episodes: int = 10,
    seed: int = 0,
    deterministic: bool = True,
    video: str | Path | None = None,
    max_episode_steps: int | None = None,
) -> EvaluationResult:
    """Run ``episodes`` whole episodes of ``environment`` with ``agent.predict``.

    ``environment`` is a Gymnasium id, a :class:`GymEnvSpec` (entry point, config and
    wrappers included) or a mapping of one, or a ``gymnasium.Env`` object (used as it
    is, and left open: an agent trained on an environment given in Python). Episode ``i`` is reset with seed
    ``seed + i``. ``video`` (a ``.gif`` or ``.mp4`` path) records the first episode.
    ``max_episode_steps`` cuts episodes that run longer (for environments without a
    time limit); left None, :data:`~agilerl.training.evaluation_cap.EVAL_EPISODE_CAP`
    does, with a warning. Problems are :class:`EvaluationError` (and
    :class:`~agilerl.families.environments.EnvironmentSpecError` for the environment).
    """
    check_counts(episodes, max_episode_steps)
    video = None if video is None else Path(video)
    if isinstance(environment, gym.Env):  # the user's object: used as it is, left open
        env, name, close = environment, type(environment).__name__, False
        if video is not None and env.render_mode != "rgb_array":
            raise EvaluationError(
                f"video: {name} renders as {env.render_mode!r}; make it with "
                "render_mode='rgb_array' to record it"
            )
    else:
        (env, name), close = _episodes_env(environment, video), True
    try:
        check_spaces(agent, env, name)
        writer = None
        if video is not None:
            writer = _video_writer(video, float(env.metadata.get("render_fps") or 30))
        returns, lengths, frames = [], [], 0
        # an environment whose episodes never end stops at the cap (a warning says so)
        limit, cut = episode_steps(max_episode_steps), False
        sampling = contextlib.nullcontext() if deterministic else seeded_sampling(agent, seed)
        with sampling:
            for episode in range(episodes):
                obs, info = env.reset(seed=seed + episode)
                recorder = writer if episode == 0 else None
                if recorder is not None:
                    recorder.add(_frame(env, name))
                    frames += 1
                total, steps, done = 0.0, 0, False
                while not done and steps < limit:
                    mask = info.get("action_mask")
                    # a recurrent agent's memory starts afresh with each episode
                    action, _ = agent.predict(
                        obs, episode_start=steps == 0, deterministic=deterministic, action_mask=mask
                    )
                    obs, reward, terminated, truncated, info = env.step(action)
                    total += float(reward)
                    steps += 1
                    done = bool(terminated or truncated)
                    if recorder is not None:
                        recorder.add(_frame(env, name))
                        frames += 1
                returns.append(total)
                lengths.append(steps)
                cut = cut or not done
        warn_if_saved_cut(cut, max_episode_steps)
        if writer is not None:
            assert video is not None  # a writer is made only for a video
            write_bytes(video, writer.finish())
    finally:
        if close:
            env.close()
    return EvaluationResult(returns, lengths, seed, deterministic, name, video, frames)


def _episodes_env(environment: Any, video: Path | None) -> tuple[gym.Env, str]:
    """The environment :func:`run_episodes` plays, made from an id, spec or mapping, and
    its name: the game as a player scores it (whole games, its own rewards:
    :func:`~agilerl.families.single_agent.atari.scoring_spec`), rendering frames when
    ``video`` is recorded."""
    spec = scoring_spec(environment_spec(environment))
    if video is not None:
        config = {**(spec.config or {}), "render_mode": "rgb_array"}
        spec = spec.model_copy(update={"config": config})
    try:
        env = make_env(spec)
    except EnvironmentSpecError as err:
        if video is None:
            raise
        raise EnvironmentSpecError(
            f"{err} (for the video: made with render_mode='rgb_array')"
        ) from None
    return env, spec.entrypoint or spec.name


def without_dataset(document: Any) -> Any:
    """An offline environment section (a mapping or an
    :class:`~agilerl.models.env.OfflineEnvSpec`) as the Gymnasium environment it evaluates
    in: the fields naming its dataset dropped; anything else as it is."""
    if hasattr(document, "dataset_path"):
        document = document.model_dump(mode="json", exclude_none=True)
    if isinstance(document, dict):
        return {k: v for k, v in document.items() if k not in OFFLINE_DATASET_FIELDS}
    return document


class GymEvaluation:
    """``Family.evaluation_environment`` and ``Family.evaluate_saved`` of the families
    whose agents act in one Gymnasium environment (single-agent, offline)."""

    def evaluation_environment(self, environment: Any, agent: Any) -> GymEnvSpec:
        return environment_spec(environment)

    def evaluate_saved(
        self,
        agent: Any,
        environment: Any,
        *,
        episodes: int,
        seed: int,
        deterministic: bool,
        video: str | Path | None = None,
        max_episode_steps: int | None = None,
    ) -> EvaluationResult:
        spec = self.evaluation_environment(environment, agent)
        return run_episodes(agent, spec, episodes, seed, deterministic, video, max_episode_steps)
